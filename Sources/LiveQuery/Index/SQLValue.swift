import Foundation
import GRDB
import GRDBSQLite

/// A value as SQLite stores it. The storage class is kept (an integer stored in a TEXT column
/// stays TEXT), because ORDER BY compares values as stored; text and blobs are kept as bytes, so
/// values compare, hash and group exactly as SQLite does (sqlite-facts.md).
public enum SQLValue: Hashable, Sendable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(SQLText)
    case blob([UInt8])

    /// The value of `databaseValue`, storage class preserved. GRDB decodes text through Swift
    /// strings: prefer values read by LiveList itself when exact bytes matter.
    public init(_ databaseValue: DatabaseValue) {
        switch databaseValue.storage {
        case .null: self = .null
        case let .int64(value): self = .integer(value)
        case let .double(value): self = .real(value)
        case let .string(value): self = .text(SQLText(value))
        case let .blob(data): self = .blob(Array(data))
        }
    }

    /// Reads column `index` of the current row of `statement` exactly as stored: text with its
    /// length (embedded NUL bytes and invalid UTF-8 included), never as a C string.
    init(statement: SQLiteStatement, column index: Int32) {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: self = .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: self = .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            // sqlite3_column_text before sqlite3_column_bytes: the length is the text's.
            let pointer = sqlite3_column_text(statement, index)
            let count = Int(sqlite3_column_bytes(statement, index))
            guard let pointer, count > 0 else {
                self = .text(SQLText(""))
                return
            }
            self = .text(SQLText(bytes: UnsafeBufferPointer(start: pointer, count: count)))
        case SQLITE_BLOB:
            let pointer = sqlite3_column_blob(statement, index)
            let count = Int(sqlite3_column_bytes(statement, index))
            guard let pointer, count > 0 else {
                self = .blob([])
                return
            }
            self = .blob(Array(UnsafeRawBufferPointer(start: pointer, count: count)))
        default: self = .null
        }
    }

    /// Whether the value is NULL.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The value as GRDB binds it. Text that is not valid UTF-8 cannot be bound as text through
    /// GRDB: `nil` then.
    public var databaseValue: DatabaseValue? {
        switch self {
        case .null: .null
        case let .integer(value): value.databaseValue
        case let .real(value): value.databaseValue
        case let .text(text): text.isValidUTF8 ? text.string.databaseValue : nil
        case let .blob(bytes): Data(bytes).databaseValue
        }
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
