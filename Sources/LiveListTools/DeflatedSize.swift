import CompressNIO
import NIOCore

/// What permessage-deflate (RFC 7692) puts on the wire for a sequence of messages on one
/// connection: raw deflate with a 32 KiB window kept from message to message (context takeover,
/// what browsers and the Swift client negotiate), each message flushed and stripped of its
/// 4-byte tail — measured by compressing the very frames the benchmark received.
final class DeflatedSize {
    private let compressor: ZlibCompressor

    init() throws {
        compressor = try ZlibCompressor(algorithm: .deflate, configuration: ZlibConfiguration(windowSize: 15))
    }

    /// The payload bytes of `message` as the next message of the connection.
    func bytes(of message: String) throws -> Int {
        var buffer = ByteBuffer(string: message)
        let compressed = try buffer.compressStream(with: compressor, flush: .sync, allocator: ByteBufferAllocator())
        return max(0, compressed.readableBytes - 4)
    }
}
