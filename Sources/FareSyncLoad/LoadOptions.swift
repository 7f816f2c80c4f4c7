import FareSyncEvents

/// How the load by account (`AccountLoad`) runs.
public struct LoadOptions: Sendable {
    /// Which account each message key belongs to.
    public var accounts: AccountKeys
    /// About this many bytes of log per shard of accounts (what one shard holds in memory
    /// grows with it).
    public var shardBytes: Int = 16 << 20
    /// At most this many shards (spill files open at once); larger logs make larger shards.
    public var shardsMax: Int = 512
    /// Shards applied at once.
    public var workers: Int = 2
    /// A single log file of at least this many bytes is routed as two halves at once.
    public var splitBytes: Int = 4 << 20
    /// Where the spill files go (a new directory in it, removed at the end); default `$TMPDIR`,
    /// else `/tmp`. They take about the size of the logs.
    public var spillDirectory: String?

    public init(accounts: AccountKeys) { self.accounts = accounts }
}
