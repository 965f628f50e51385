/// A JSON value as the `livelist` tools read and write it. Integers stay exact — `Int64`, or their
/// decimal digits when they do not fit — and other numbers are `Double`. Strings are equal when their
/// text is, code point for code point (never by Unicode canonical equivalence). Object keys keep
/// their order so that output is stable.
public indirect enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    /// An integer too large for 64 bits, as its digits (with a leading `-` when negative).
    case bigInteger(String)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([Member])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.integer(a), .integer(b)): a == b
        case let (.bigInteger(a), .bigInteger(b)): a.utf8.elementsEqual(b.utf8)
        case let (.double(a), .double(b)): a == b
        case let (.string(a), .string(b)): a.utf8.elementsEqual(b.utf8)
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case let .bool(value): hasher.combine(value)
        case let .integer(value): hasher.combine(value)
        case let .bigInteger(digits):
            hasher.combine(1)
            for byte in digits.utf8 { hasher.combine(byte) }
        case let .double(value): hasher.combine(value)
        case let .string(text):
            hasher.combine(2)
            for byte in text.utf8 { hasher.combine(byte) }
            hasher.combine(text.utf8.count)
        case let .array(elements): hasher.combine(elements)
        case let .object(members): hasher.combine(members)
        }
    }

    /// An object member; keys compare as JSON text, code point for code point.
    public struct Member: Hashable, Sendable {
        /// The member's name.
        public var key: String
        /// The member's value.
        public var value: JSONValue
        /// Creates a member.
        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }

        public static func == (lhs: Member, rhs: Member) -> Bool {
            lhs.key.utf8.elementsEqual(rhs.key.utf8) && lhs.value == rhs.value
        }

        public func hash(into hasher: inout Hasher) {
            for byte in key.utf8 { hasher.combine(byte) }
            hasher.combine(value)
        }
    }

    /// The value of `key` in an object.
    public subscript(key: String) -> JSONValue? {
        guard case let .object(members) = self else { return nil }
        return members.first { $0.key.utf8.elementsEqual(key.utf8) }?.value
    }

    /// Compact JSON text.
    public var serialized: String {
        var output = ""
        write(to: &output)
        return output
    }

    /// Appends the compact JSON text to `output`.
    ///
    /// - Complexity: O(size of the text).
    public func write(to output: inout String) {
        switch self {
        case .null: output += "null"
        case let .bool(value): output += value ? "true" : "false"
        case let .integer(value): output += String(value)
        case let .bigInteger(digits): output += digits
        case let .double(value):
            if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
                output += String(Int64(value))
            } else if value.isFinite {
                output += "\(value)"
            } else {
                output += "null"
            }
        case let .string(value): Self.writeString(value, to: &output)
        case let .array(elements):
            output += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { output += "," }
                element.write(to: &output)
            }
            output += "]"
        case let .object(members):
            output += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { output += "," }
                Self.writeString(member.key, to: &output)
                output += ":"
                member.value.write(to: &output)
            }
            output += "}"
        }
    }

    private static func writeString(_ string: String, to output: inout String) {
        output += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}

extension JSONValue: ExpressibleByArrayLiteral, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// An object of `members`, in their order.
    public init(_ members: KeyValuePairs<String, JSONValue>) {
        self = .object(members.map { Member(key: $0.key, value: $0.value) })
    }
}
