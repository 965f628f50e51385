/// A database value as the protocol carries it: SQLite's five storage classes, each kept exact
/// through JSON — every integer to the last digit, every real to the last bit, every text code
/// point for code point (NUL included, never normalized), every blob byte for byte.
///
/// In JSON: `null`; an integer within ±(2⁵³ − 1) as a number and beyond it as `{"i":"digits"}`
/// (so a JavaScript client never rounds it); a real as `{"f":number}` (`{"f":"inf"}`,
/// `{"f":"-inf"}`; SQLite stores no NaN); a text as a string; a blob as `{"b":"base64"}`.
///
/// ```swift
/// import LiveListWire
///
/// func tagged() -> String {
///     WireValue.integer(9_007_199_254_740_993).json.serialized   // {"i":"9007199254740993"}
/// }
/// ```
public enum WireValue: Hashable, Sendable, CustomStringConvertible {
    /// NULL.
    case null
    /// An INTEGER.
    case integer(Int64)
    /// A REAL.
    case real(Double)
    /// A TEXT, code point for code point.
    case text(String)
    /// A BLOB, byte for byte.
    case blob([UInt8])

    /// The largest integer a JSON number carries exactly in every client (2⁵³ − 1).
    public static let largestPlainInteger: Int64 = (1 << 53) - 1

    /// The value in the protocol's JSON form.
    public var json: JSONValue {
        switch self {
        case .null: return .null
        case let .integer(value):
            if value.magnitude <= UInt64(Self.largestPlainInteger) { return .integer(value) }
            return .object([JSONValue.Member(key: "i", value: .string(String(value)))])
        case let .real(value):
            let number: JSONValue = value.isFinite ? .double(value) : .string(value > 0 ? "inf" : value < 0 ? "-inf" : "nan")
            return .object([JSONValue.Member(key: "f", value: number)])
        case let .text(text): return .string(text)
        case let .blob(bytes): return .object([JSONValue.Member(key: "b", value: .string(Base64.encode(bytes)))])
        }
    }

    /// Reads a value in the protocol's JSON form.
    public init(json: JSONValue) throws(WireDecodingError) {
        switch json {
        case .null: self = .null
        case let .integer(value):
            guard value.magnitude <= UInt64(Self.largestPlainInteger) else { throw .invalidValue("integer \(value) must be sent as {\"i\":\"\(value)\"}") }
            self = .integer(value)
        case let .string(text): self = .text(text)
        case let .object(members) where members.count == 1:
            let member = members[0]
            switch (member.key, member.value) {
            case let ("i", .string(digits)):
                guard let value = Int64(digits), String(value) == digits else { throw .invalidValue("\"\(digits)\" is not a 64-bit integer") }
                self = .integer(value)
            case let ("f", .double(value)): self = .real(value)
            case let ("f", .integer(value)) where value.magnitude < 1 << 53: self = .real(Double(value))
            case ("f", .string("inf")): self = .real(.infinity)
            case ("f", .string("-inf")): self = .real(-.infinity)
            case let ("b", .string(text)):
                guard let bytes = Base64.decode(text) else { throw .invalidValue("blob is not base64") }
                self = .blob(bytes)
            default: throw .invalidValue("unknown value \(json.serialized.prefix(64))")
            }
        default: throw .invalidValue("unknown value \(json.serialized.prefix(64))")
        }
    }

    public var description: String { json.serialized }
}
