import NIOCore
import NIOWebSocket

/// One server message as the connections send it: its UTF-8 text (for hummingbird-websocket's
/// writer, which may compress it) and, when it fits one WebSocket frame, the whole frame —
/// header and text, unmasked, FIN, text opcode (RFC 6455 §5.2) — built once and written as it is
/// by every connection that writes directly. A message shared by many subscribers is one value,
/// so its bytes and its frame are made once per commit, not once per connection.
struct WireMessage: Sendable {
    let text: ByteBuffer
    /// `text` framed; `nil` when it needs more than one frame (the writer then splits it).
    let frame: ByteBuffer?

    init(_ text: ByteBuffer) {
        self.text = text
        guard text.readableBytes <= LiveListServer.webSocketFrameSize else {
            frame = nil
            return
        }
        var frame = Self.header(length: text.readableBytes, fin: true, opcode: .text)
        var payload = text
        frame.writeBuffer(&payload)
        self.frame = frame
    }

    init(string: String) {
        self.init(ByteBuffer(string: string))
    }

    /// The header of a server frame (unmasked) carrying `length` bytes.
    static func header(length: Int, fin: Bool, opcode: WebSocketOpcode) -> ByteBuffer {
        var header = ByteBuffer()
        header.reserveCapacity(10)
        header.writeInteger((fin ? 0x80 : 0) | UInt8(webSocketOpcode: opcode))
        if length < 126 {
            header.writeInteger(UInt8(length))
        } else if length <= Int(UInt16.max) {
            header.writeInteger(UInt8(126))
            header.writeInteger(UInt16(length))
        } else {
            header.writeInteger(UInt8(127))
            header.writeInteger(UInt64(length))
        }
        return header
    }
}
