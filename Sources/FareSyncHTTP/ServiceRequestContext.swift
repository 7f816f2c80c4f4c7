import FareSyncIdentity
import Hummingbird
import HummingbirdAuth
import NIOCore

/// The request context of FareSync's HTTP application: the verified ID token (once
/// `IDTokenMiddleware` let the request through) and the client's address, which the sign-in
/// throttle counts by.
public struct ServiceRequestContext: AuthRequestContext, RemoteAddressRequestContext, RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var identity: IDToken?
    public let remoteAddress: SocketAddress?
    /// The request's connection: a response that never ends on its own (a live stream) watches it
    /// close, and closes it when it must make room.
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        identity = nil
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }
}

extension RequestContext {
    /// The client's IP address, for throttles (nil where the context does not know it).
    var clientAddress: String? { (self as? any RemoteAddressRequestContext)?.remoteAddress?.ipAddress }
}
