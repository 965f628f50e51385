import LiveListWire

/// Joins a client's WebSocket frames into messages under the protocol's rules, deciding what
/// each frame leads to: a message, nothing yet (a fragment), or closing the connection with the
/// code that says why — a message larger than the limit (1009, whatever its fragmentation), a
/// binary message (1003), text that is not UTF-8 (1007), a continuation without a start or a new
/// message inside one (1002). Decided without I/O. `package`: the client-message fuzz target
/// (`Sources/Fuzz/client-messages`) feeds it frames.
package struct MessageAssembly {
    package enum Opcode {
        case text
        case binary
        case continuation
    }

    package enum Outcome: Equatable {
        /// A whole text message, as UTF-8 bytes known to be valid.
        case message([UInt8])
        /// A fragment: the message goes on in the next frame.
        case pending
        /// The connection closes with `code` and `reason`.
        case close(WireCloseCode, String)
    }

    /// The largest message accepted, in bytes, its frames joined.
    package let maximumBytes: Int
    private var started: Opcode?
    private var bytes: [UInt8] = []

    package init(maximumBytes: Int) {
        self.maximumBytes = maximumBytes
    }

    /// The outcome of the next frame.
    package mutating func receive(_ opcode: Opcode, fin: Bool, data: some Collection<UInt8>) -> Outcome {
        switch (opcode, started) {
        case (.continuation, nil):
            return .close(.protocolError, "a continuation frame without a message to continue")
        case (.text, _?), (.binary, _?):
            return .close(.protocolError, "a new message began before the last one ended")
        case (.continuation, _?):
            break
        case (.text, nil), (.binary, nil):
            started = opcode
            bytes = []
        }
        guard bytes.count + data.count <= maximumBytes else {
            return .close(.messageTooBig, "a message larger than \(maximumBytes) bytes")
        }
        bytes.append(contentsOf: data)
        guard fin else { return .pending }
        defer {
            started = nil
            bytes = []
        }
        guard started == .text else { return .close(.unsupportedData, "the protocol is JSON text frames") }
        guard String(validating: bytes, as: UTF8.self) != nil else { return .close(.invalidText, "a text message that is not UTF-8") }
        return .message(bytes)
    }
}
