import NIOCore

/// Closes a connection whose first request head (an HTTP request or a WebSocket upgrade) has not
/// arrived whole within `timeout` of its accept: a socket that sends nothing, sends its headers
/// a byte at a time, or half-closes early holds nothing of the server's for longer. First in the
/// pipeline, it passes every byte on and leaves the pipeline once the head's blank line is seen.
/// (After that, an idle HTTP connection is closed by the HTTP layer's idle timeout, and a silent
/// WebSocket by its ping.)
final class RequestHeadDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    /// The last bytes seen, to find `\r\n\r\n` across reads.
    private var tail: [UInt8] = []

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let complete = Self.findsEndOfHead(tail: &tail, in: buffer.readableBytesView)
        context.fireChannelRead(data)
        if complete {
            deadline?.cancel()
            deadline = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    /// Whether `bytes`, after the `tail` of the bytes before them, complete a request head (a
    /// blank line: `\r\n\r\n`); `tail` becomes the last three bytes seen.
    static func findsEndOfHead(tail: inout [UInt8], in bytes: some Collection<UInt8>) -> Bool {
        var window = tail
        for byte in bytes {
            window.append(byte)
            if window.count > 4 { window.removeFirst(window.count - 4) }
            if window == [13, 10, 13, 10] { return true }
        }
        tail = Array(window.suffix(3))
        return false
    }
}
