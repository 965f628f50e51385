import HummingbirdCore
import Logging
import NIOCore

/// A server's connections as `inner` (HTTP with the WebSocket upgrade) sets them up, each also
/// tracked until it closes (``OpenChannels``) and held to a deadline for its first request head
/// (``RequestHeadDeadline``).
struct GuardedChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value

    let inner: Inner
    let requestHeadTimeout: TimeAmount
    let channels: OpenChannels

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channels.insert(channel)
        let timeout = requestHeadTimeout
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(RequestHeadDeadline(timeout: timeout), position: .first)
        }.flatMap { inner.setup(channel: channel, logger: logger) }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
