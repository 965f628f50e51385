/// Why a frame is not a message of the protocol. A server that reads one closes the connection
/// with ``WireCloseCode/protocolError`` (or ``WireCloseCode/messageTooBig``) and this text as
/// the reason; nothing else on the server is affected — except ``badArguments(_:_:)``, a request
/// the server refuses alone.
public enum WireDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The frame is larger than the receiver accepts.
    case tooLarge(bytes: Int, limit: Int)
    /// The frame is not JSON.
    case notJSON(String)
    /// The frame is JSON but not an object with a string `type`.
    case notAMessage
    /// The `type` names no message of the protocol (for the receiver's side).
    case unknownType(String)
    /// A required field is absent.
    case missingField(String)
    /// A field has the wrong shape or an impossible value.
    case invalidField(String, String)
    /// A database value is not in the protocol's form (``WireValue``).
    case invalidValue(String)
    /// A request whose every field has its shape, but one of whose values is not written in the
    /// protocol's form: an argument that is not a ``WireValue`` (`{"f":"nan"}`,
    /// `{"i":"99999999999999999999"}`, an array), or a `mutate`'s `id` written with a fraction or
    /// an exponent (`16.0`, `1.6e1`). The server refuses that request alone, with `badArguments`
    /// (a `mutate`: under its number), and the connection goes on. `request` is the message
    /// without its arguments; `reason` says which value and why.
    case badArguments(ClientMessage, String)

    public var description: String {
        switch self {
        case let .tooLarge(bytes, limit): "frame of \(bytes) bytes is over the limit of \(limit)"
        case let .notJSON(reason): "not JSON: \(reason)"
        case .notAMessage: "not a message: expected a JSON object with a string \"type\""
        case let .unknownType(type): "unknown message type \"\(type)\""
        case let .missingField(field): "missing field \"\(field)\""
        case let .invalidField(field, reason): "field \"\(field)\": \(reason)"
        case let .invalidValue(reason): "invalid value: \(reason)"
        case let .badArguments(_, reason): reason
        }
    }
}
