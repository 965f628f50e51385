import NIOCore
import NIOWebSocket

/// Writes one connection's queued messages straight to its channel, on the channel's event
/// loop, as WebSocket frames built once per message (`WireMessage`) and one flush per turn.
/// While the channel cannot take more (a client that reads too slowly), the messages stay in
/// the outbox, where its byte limit applies; they are written when the channel becomes writable,
/// and dropped when the connection closes meanwhile.
///
/// Its handler sits just before the WebSocket frame encoder (on the socket's side), so frames
/// pass the handlers the connection's bytes must pass (TLS) and skip the per-frame work of the
/// ones above. Frames written this way skip the connection's WebSocket extensions: it is used
/// only where none was negotiated.
final class ChannelWriter: Sendable {
    let loop: LoopWriter
    private let handler: NIOLoopBound<DirectWriteHandler>

    private init(loop: LoopWriter, handler: NIOLoopBound<DirectWriteHandler>) {
        self.loop = loop
        self.handler = handler
    }

    /// Takes the connection's writes over: adds the handler before the frame encoder, then
    /// routes the outbox's messages to it. Throws when the channel has no WebSocket encoder or
    /// is gone; the outbox then stays with the writer task.
    static func start(channel: any Channel, outbox: Outbox, loop: LoopWriter, metrics: LiveListMetrics) async throws {
        let writer = try await channel.eventLoop.submit {
            let handler = DirectWriteHandler(outbox: outbox, metrics: metrics)
            let encoder = try channel.pipeline.syncOperations.handler(type: WebSocketFrameEncoder.self)
            try channel.pipeline.syncOperations.addHandler(handler, position: .before(encoder))
            return ChannelWriter(loop: loop, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
        }.get()
        outbox.useDirectWrites { loop.schedule(writer) }
    }

    /// On the event loop: writes what is queued.
    func writeQueued() {
        handler.value.writeQueued()
    }
}

/// The channel end of a `ChannelWriter`: writes frames from its place in the pipeline, and
/// hears when the channel can take frames again, and when it is gone.
final class DirectWriteHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let outbox: Outbox
    /// Counts the frames written and their bytes.
    private let metrics: LiveListMetrics
    private var context: ChannelHandlerContext?

    init(outbox: Outbox, metrics: LiveListMetrics) {
        self.outbox = outbox
        self.metrics = metrics
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        outbox.finish()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { writeQueued() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        outbox.finish()
        context.fireChannelInactive()
    }

    /// Writes what is queued, or leaves it queued while the channel is full.
    func writeQueued() {
        guard let context, context.channel.isActive else {
            outbox.finish()
            return
        }
        guard context.channel.isWritable else {
            if outbox.isClosing {
                // A stalled client is closed without what it could not take.
                _ = outbox.takeDirect()
                outbox.directWritten()
            } else {
                outbox.parkDirect()
            }
            return
        }
        let frames = outbox.takeDirect()
        for frame in frames { write(frame.message, context) }
        if !frames.isEmpty {
            context.flush()
            metrics.framesSent.increment(by: frames.count)
            metrics.bytesSent.increment(by: frames.reduce(0) { $0 + $1.message.text.readableBytes })
        }
        outbox.directWritten()
    }

    private func write(_ message: WireMessage, _ context: ChannelHandlerContext) {
        if let frame = message.frame {
            // The shared frame as it is: no copy, no encoding per connection.
            context.write(wrapOutboundOut(frame), promise: nil)
            return
        }
        // Larger than a frame: 16 KiB fragments, a text frame and continuations.
        let size = LiveListServer.webSocketFrameSize
        var rest = message.text
        var opcode = WebSocketOpcode.text
        while rest.readableBytes > size, let slice = rest.readSlice(length: size) {
            context.write(wrapOutboundOut(WireMessage.header(length: size, fin: false, opcode: opcode)), promise: nil)
            context.write(wrapOutboundOut(slice), promise: nil)
            opcode = .continuation
        }
        context.write(wrapOutboundOut(WireMessage.header(length: rest.readableBytes, fin: true, opcode: opcode)), promise: nil)
        context.write(wrapOutboundOut(rest), promise: nil)
    }
}
