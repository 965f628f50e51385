import Foundation
import LiveListWire

/// Why a remote row could not be decoded into the app's record type: the column and what did
/// not fit.
public struct RemoteDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What did not fit.
    public enum Reason: Hashable, Sendable {
        /// The query has no column of that name.
        case missingColumn
        /// The value is of another kind than the property's type takes (NULL for a non-optional
        /// property, text for a number…).
        case typeMismatch(expected: String)
        /// A number that the property's type cannot hold exactly (past its range, a fraction for
        /// an integer, an integer past 2⁵³ for a `Double`).
        case notExact(expected: String)
        /// Text that is not a date, a UUID, or bytes that are not a UUID.
        case unreadable(expected: String)
        /// The record's type asks for a shape rows do not have (a nested object or an array).
        case unsupportedShape(String)
    }

    /// The column, as the query names it.
    public var column: String
    /// The value the server sent (`nil` when the column is missing).
    public var value: WireValue?
    /// What did not fit.
    public var reason: Reason

    public var description: String {
        let value = value.map { " (\($0))" } ?? ""
        switch reason {
        case .missingColumn: return "column \"\(column)\": the query has no such column"
        case let .typeMismatch(expected): return "column \"\(column)\": \(expected) expected\(value)"
        case let .notExact(expected): return "column \"\(column)\": not exactly a \(expected)\(value)"
        case let .unreadable(expected): return "column \"\(column)\": not a \(expected)\(value)"
        case let .unsupportedShape(shape): return "column \"\(column)\": a row has no \(shape)"
        }
    }
}

/// Decodes a ``RemoteRecord`` into an app's `Decodable` type by column name, exactly: integers
/// into any integer type that holds them (`Int64` past 2⁵³ included), numbers into `Double` and
/// `Float` when exact, text into `String`, bytes into `Data`, `Bool` from 0 and 1, `Date` from
/// ISO 8601 text (`2026-11-27T10:00:00Z`, or SQLite's `2026-11-27 10:00:00.000`, read as UTC) or
/// seconds since 1970, `UUID` from its text or 16 bytes, NULL into an `Optional` as `nil`.
/// Anything else throws a ``RemoteDecodingError`` naming the column.
public struct RemoteRecordDecoder: Sendable {
    /// A decoder.
    public init() {}

    /// `record` as a `T`.
    ///
    /// - Complexity: O(columns) per property read (records have few columns).
    public func decode<T: Decodable>(_ type: T.Type, from record: RemoteRecord) throws -> T {
        return try T(from: RowDecoder(record: record))
    }
}

/// The decoder of one row: a keyed container of its columns.
private struct RowDecoder: Decoder {
    let record: RemoteRecord
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Columns<Key>(record: record))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw RemoteDecodingError(column: "", value: nil, reason: .unsupportedShape("array (decode a row as a keyed record)"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw RemoteDecodingError(column: "", value: nil, reason: .unsupportedShape("single value (decode a row as a keyed record)"))
    }
}

private struct Columns<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let record: RemoteRecord
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { record.columns.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { record[key.stringValue] != nil }

    private func value(_ key: Key) throws -> SingleValue {
        guard let value = record[key.stringValue] else {
            throw RemoteDecodingError(column: key.stringValue, value: nil, reason: .missingColumn)
        }
        return SingleValue(column: key.stringValue, value: value)
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key).value == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try value(key).bool() }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try value(key).string() }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try value(key).double() }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try value(key).float() }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try value(key).integer(Int.self) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try value(key).integer(Int8.self) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try value(key).integer(Int16.self) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try value(key).integer(Int32.self) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try value(key).integer(Int64.self) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try value(key).integer(UInt.self) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try value(key).integer(UInt8.self) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try value(key).integer(UInt16.self) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try value(key).integer(UInt32.self) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try value(key).integer(UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try value(key).decode(T.self) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw RemoteDecodingError(column: key.stringValue, value: record[key.stringValue], reason: .unsupportedShape("nested object"))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw RemoteDecodingError(column: key.stringValue, value: record[key.stringValue], reason: .unsupportedShape("array"))
    }

    func superDecoder() throws -> any Decoder { RowDecoder(record: record) }
    func superDecoder(forKey key: Key) throws -> any Decoder { RowDecoder(record: record) }
}

/// One column's value, read as the property's type asks.
private struct SingleValue: Decoder, SingleValueDecodingContainer {
    let column: String
    let value: WireValue
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    private func failure(_ reason: RemoteDecodingError.Reason) -> RemoteDecodingError {
        RemoteDecodingError(column: column, value: value, reason: reason)
    }

    func bool() throws -> Bool {
        switch value {
        case .integer(0): return false
        case .integer(1): return true
        case .integer: throw failure(.notExact(expected: "Bool (0 or 1)"))
        default: throw failure(.typeMismatch(expected: "Bool"))
        }
    }

    func string() throws -> String {
        guard case let .text(text) = value else { throw failure(.typeMismatch(expected: "String")) }
        return text
    }

    func double() throws -> Double {
        switch value {
        case let .real(real): return real
        case let .integer(integer):
            // Exact when it survives the round trip (every integer up to 2⁵³, and some beyond).
            let double = Double(integer)
            guard double.magnitude < 0x1p63, Int64(double) == integer else { throw failure(.notExact(expected: "Double")) }
            return double
        default: throw failure(.typeMismatch(expected: "Double"))
        }
    }

    func float() throws -> Float {
        let double = try double()
        guard let float = Float(exactly: double) ?? (double.isNaN ? Float.nan : nil) else { throw failure(.notExact(expected: "Float")) }
        return float
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        switch value {
        case let .integer(integer):
            guard let exact = T(exactly: integer) else { throw failure(.notExact(expected: "\(T.self)")) }
            return exact
        case let .real(real):
            guard let exact = T(exactly: real) else { throw failure(.notExact(expected: "\(T.self)")) }
            return exact
        default: throw failure(.typeMismatch(expected: "\(T.self)"))
        }
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == Date.self, let date = try date() as? T { return date }
        if T.self == UUID.self, let uuid = try uuid() as? T { return uuid }
        if T.self == Data.self {
            guard case let .blob(bytes) = value, let data = Data(bytes) as? T else { throw failure(.typeMismatch(expected: "Data")) }
            return data
        }
        if T.self == WireValue.self, let same = value as? T { return same }
        // An app's own type (a RawRepresentable enum, a wrapper): from this single value.
        return try T(from: self)
    }

    private func date() throws -> Date {
        switch value {
        case .integer, .real, .text:
            // One reading of dates for every client: the value's own (`WireValue.date`).
            guard let date = value.date else { throw failure(.unreadable(expected: "date (ISO 8601)")) }
            return date
        default: throw failure(.typeMismatch(expected: "Date"))
        }
    }

    private func uuid() throws -> UUID {
        switch value {
        case .text:
            guard let uuid = value.uuid else { throw failure(.unreadable(expected: "UUID")) }
            return uuid
        case .blob:
            guard let uuid = value.uuid else { throw failure(.unreadable(expected: "UUID (16 bytes)")) }
            return uuid
        default: throw failure(.typeMismatch(expected: "UUID"))
        }
    }

    // Decoder (for an app's own single-value types)
    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw failure(.unsupportedShape("nested object"))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw failure(.unsupportedShape("array")) }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    // SingleValueDecodingContainer
    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try bool() }
    func decode(_ type: String.Type) throws -> String { try string() }
    func decode(_ type: Double.Type) throws -> Double { try double() }
    func decode(_ type: Float.Type) throws -> Float { try float() }
    func decode(_ type: Int.Type) throws -> Int { try integer(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(UInt64.self) }
}
