/// How many of the console's Server-Sent Events streams may be open at once, in all and from one
/// client address. A stream holds its connection for as long as its page is open and is exempt
/// from the idle timeout, so without a cap open pages (or a script opening streams) could take
/// every connection the server allows and lock the Auth and ticket APIs out. The cap keeps half
/// the connection limit for everything else; a stream past it is answered 503 with `Retry-After`.
/// A client past its own cap has its oldest stream closed to make room (`ConsoleWatcher.subscribe`
/// says why); a browser holds at most six connections to a host, so its live pages never reach it.
///
/// ```swift
/// let limits = StreamLimits(connectionLimit: 1024)   // total 512, perClient 16
/// ```
public struct StreamLimits: Sendable, Equatable {
    /// Streams open at once in the process.
    public var total: Int
    /// Streams open at once from one client address: a browser opens one per console tab.
    public var perClient: Int

    public init(total: Int, perClient: Int) {
        self.total = max(0, total)
        self.perClient = max(0, perClient)
    }

    /// The limits for a server that serves at most `connectionLimit` connections at once.
    public init(connectionLimit: Int) {
        let total = connectionLimit / 2
        self.init(total: total, perClient: min(Self.perClientDefault, total))
    }

    static let perClientDefault = 16
    /// What a refused stream's `Retry-After` says, in seconds.
    static let retryAfterSeconds = 10
}
