import Foundation

/// A value as SQLite stores it. The storage class is kept (an integer stored in a TEXT column
/// stays TEXT), because ORDER BY compares values as stored; text and blobs are kept as bytes, so
/// values compare, hash and group exactly as SQLite does (docs/SQLITE-FACTS.md). How SQLite reads and
/// binds them is in `Engine/SQLite/SQLValue+SQLite.swift`.
public enum SQLValue: Hashable, Sendable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(SQLText)
    case blob([UInt8])

    /// Whether the value is NULL.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The value as an SQL literal, exact for every storage class (text by its bytes).
    public var sqlLiteral: String {
        switch self {
        case .null: "NULL"
        case let .integer(value): String(value)
        case let .real(value):
            value.isFinite ? "\(value)" : (value > 0 ? "9e999" : "-9e999")
        case let .text(text):
            text.isValidUTF8 && !text.bytes.contains(0)
                ? "'" + text.string.replacingOccurrences(of: "'", with: "''") + "'"
                : "CAST(X'" + Self.hex(text.bytes) + "' AS TEXT)"
        case let .blob(bytes): "X'" + Self.hex(bytes) + "'"
        }
    }

    public var description: String {
        switch self {
        case .null: "NULL"
        case let .integer(value): String(value)
        case let .real(value): String(value)
        case let .text(text): "'\(text.string)'"
        case let .blob(bytes): "X'" + Self.hex(bytes) + "'"
        }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            result.append(digits[Int(byte >> 4)])
            result.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: result, as: UTF8.self)
    }
}
