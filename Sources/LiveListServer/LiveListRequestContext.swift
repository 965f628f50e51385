import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// A WebSocket request context that keeps the connection's channel.
///
/// When the router passed to ``LiveListServer/addRoutes(to:path:)`` has such a context, the server
/// writes each commit's frames straight to the channels on their event loops, one hop per loop
/// for all of its connections, instead of waking a task per connection: the cost of a commit
/// for each subscriber drops to about the socket write. Connections that negotiated an extension
/// (permessage-deflate) keep hummingbird-websocket's writer, which compresses.
public protocol ChannelWebSocketRequestContext: WebSocketRequestContext {
    /// The connection's channel (the one upgraded to WebSocket).
    var channel: any Channel { get }
}

/// The request context of ``LiveListServer/application(host:port:demoPage:onRunning:)``:
/// hummingbird-websocket's basic context plus the channel.
public struct LiveListRequestContext: RequestContext, ChannelWebSocketRequestContext {
    /// Hummingbird's per-request storage (request, logger, parameters).
    public var coreContext: CoreRequestContextStorage
    /// The WebSocket handler the router chose for the upgrade.
    public let webSocket: WebSocketHandlerReference<Self>
    /// The connection's channel, kept for direct writes.
    public let channel: any Channel

    /// The context of a request that arrived on `source`'s channel.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
    }
}
