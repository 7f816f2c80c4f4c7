import Hummingbird
import NIOCore
import NIOHTTPTypes

/// Closes connections that hold the server without using it: one whose request (head and body)
/// is not complete `requestTimeout` after its first byte arrived, and one that stays idle between
/// requests (keep-alive) for `idleTimeout`. A client that sends half its headers and stops gives
/// its file descriptor back within `requestTimeout`.
///
/// Two handlers share one clock: `ByteWatcher`, first in the pipeline, sees a request's first
/// byte, which only raw bytes show; `PartWatcher`, after the HTTP decoder, sees where a request
/// ends and a response is sent.
///
/// ```swift
/// let server: HTTPServerBuilder = .http1(configuration: .init(additionalChannelHandlers: ConnectionDeadlines(requestTimeout: .seconds(30), idleTimeout: .seconds(60)).handlers()))
/// ```
public struct ConnectionDeadlines: Sendable {
    public var requestTimeout: TimeAmount
    public var idleTimeout: TimeAmount

    public init(requestTimeout: TimeAmount = .seconds(30), idleTimeout: TimeAmount = .seconds(60)) {
        self.requestTimeout = requestTimeout
        self.idleTimeout = idleTimeout
    }

    /// The handlers for one new connection.
    public func handlers() -> [any RemovableChannelHandler] {
        [PartWatcher(clock: DeadlineClock(self))]
    }

    /// One connection's timers; used on its event loop only.
    final class DeadlineClock {
        let deadlines: ConnectionDeadlines
        var inRequest = false
        var timer: Scheduled<Void>?
        init(_ deadlines: ConnectionDeadlines) { self.deadlines = deadlines }

        func arm(_ amount: TimeAmount, _ context: ChannelHandlerContext) {
            timer?.cancel()
            let channel = context.channel
            timer = context.eventLoop.scheduleTask(in: amount) { channel.close(promise: nil) }
        }

        func disarm() {
            timer?.cancel()
            timer = nil
        }
    }

    /// Raw bytes: the first byte of a request starts its deadline.
    final class ByteWatcher: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        let clock: DeadlineClock
        init(clock: DeadlineClock) { self.clock = clock }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if !clock.inRequest {
                clock.inRequest = true
                clock.arm(clock.deadlines.requestTimeout, context)
            }
            context.fireChannelRead(data)
        }

        func handlerRemoved(context: ChannelHandlerContext) { clock.disarm() }
    }

    /// HTTP parts: a request's end stops its deadline; a response's end starts the idle timer.
    final class PartWatcher: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        typealias InboundOut = HTTPRequestPart
        typealias OutboundIn = HTTPResponsePart
        typealias OutboundOut = HTTPResponsePart
        let clock: DeadlineClock
        init(clock: DeadlineClock) { self.clock = clock }

        func handlerAdded(context: ChannelHandlerContext) {
            try? context.pipeline.syncOperations.addHandler(ByteWatcher(clock: clock), position: .first)
            clock.arm(clock.deadlines.idleTimeout, context)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .end = unwrapInboundIn(data) {
                clock.inRequest = false
                clock.disarm()
            }
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if case .end = unwrapOutboundIn(data), !clock.inRequest { clock.arm(clock.deadlines.idleTimeout, context) }
            context.write(data, promise: promise)
        }
    }
}
