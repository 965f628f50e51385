/// Typed reads of a message's fields, each failing with the field's name.
struct Fields {
    let members: [JSONValue.Member]

    init(_ json: JSONValue) throws(WireDecodingError) {
        guard case let .object(members) = json else { throw .notAMessage }
        self.members = members
    }

    /// The fields of one frame's message and its `type`, parsed at most `maximumDepth` deep.
    static func message(_ bytes: [UInt8], maximumDepth: Int) throws(WireDecodingError) -> (fields: Fields, type: String) {
        let json: JSONValue
        do {
            json = try JSONParser.parse(bytes, maximumDepth: maximumDepth)
        } catch {
            throw .notJSON(error.description)
        }
        let fields = try Fields(json)
        guard case let .string(type) = fields.value("type") else { throw .notAMessage }
        return (fields, type)
    }

    func value(_ key: String) -> JSONValue? {
        members.first { $0.key.utf8.elementsEqual(key.utf8) }?.value
    }

    func required(_ key: String) throws(WireDecodingError) -> JSONValue {
        guard let value = value(key) else { throw .missingField(key) }
        return value
    }

    func int(_ key: String, in range: ClosedRange<Int64> = 0...Int64(Int32.max)) throws(WireDecodingError) -> Int {
        guard case let .integer(value) = try required(key), range.contains(value) else {
            throw .invalidField(key, "expected an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return Int(value)
    }

    func string(_ key: String, maximumLength: Int = 1024) throws(WireDecodingError) -> String {
        guard case let .string(value) = try required(key) else { throw .invalidField(key, "expected a string") }
        guard value.utf8.count <= maximumLength else { throw .invalidField(key, "longer than \(maximumLength) bytes") }
        return value
    }

    func version(_ key: String) throws(WireDecodingError) -> WireVersion {
        guard let version = WireVersion(try string(key, maximumLength: 128)) else { throw .invalidField(key, "expected a version \"epoch:sequence\"") }
        return version
    }

    func array(_ key: String) throws(WireDecodingError) -> [JSONValue] {
        guard let value = value(key) else { return [] }
        guard case let .array(elements) = value else { throw .invalidField(key, "expected an array") }
        return elements
    }

    /// An array of non-negative integers.
    func integers(_ key: String) throws(WireDecodingError) -> [Int] {
        try Self.integers(try array(key), key)
    }

    /// An array of arrays of `width` integers.
    func tuples(_ key: String, width: Int) throws(WireDecodingError) -> [[Int]] {
        var result: [[Int]] = []
        for element in try array(key) {
            guard case let .array(parts) = element, parts.count == width else { throw .invalidField(key, "expected arrays of \(width) integers") }
            result.append(try Self.integers(parts, key))
        }
        return result
    }

    /// Each of `parts`, a non-negative 32-bit integer.
    static func integers(_ parts: some Collection<JSONValue>, _ key: String) throws(WireDecodingError) -> [Int] {
        var result: [Int] = []
        for part in parts {
            guard case let .integer(value) = part, value >= 0, value <= Int64(Int32.max) else {
                throw .invalidField(key, "expected non-negative integers")
            }
            result.append(Int(value))
        }
        return result
    }
}

extension JSONValue {
    static func int(_ value: Int) -> JSONValue { .integer(Int64(value)) }
}
