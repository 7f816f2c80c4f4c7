/// Which ABT account a message key belongs to. Fare contracts are keyed by their account id; users,
/// reservations and payments by uid, whose account Entur gives (`Entur`). The load by account uses
/// it to put each account's messages in one partition.
///
/// FareSync's simulated Entur derives the account from the uid (`SimulatedEntur.accountKeys`):
///
/// ```swift
/// let keys = AccountKeys(accountPrefix: Array("ATB:CustomerAccount:".utf8), accountOfUID: SimulatedEntur.abtId(uid:))
/// keys.account(ofKey: Array("u1".utf8))   // the bytes of "ATB:CustomerAccount:…"
/// ```
///
/// Most of a log's messages are keyed by uid, so the resolver takes and gives bytes: routing a
/// message makes no string.
public struct AccountKeys: Sendable {
    /// The bytes every account id starts with; a key without them is a uid.
    public var accountPrefix: [UInt8]
    /// The account id of a uid (both as UTF-8).
    public var accountOfUID: @Sendable ([UInt8]) -> [UInt8]

    public init(accountPrefix: [UInt8], accountOfUID: @escaping @Sendable ([UInt8]) -> [UInt8]) {
        self.accountPrefix = accountPrefix
        self.accountOfUID = accountOfUID
    }

    /// Whether `key` is an account id rather than a uid.
    public func isAccount(_ key: some Sequence<UInt8>) -> Bool { key.starts(with: accountPrefix) }

    /// The account a key stands for: itself if it is an account id, else the account of it as a uid.
    public func account(ofKey key: [UInt8]) -> [UInt8] {
        isAccount(key) ? key : accountOfUID(key)
    }
}
