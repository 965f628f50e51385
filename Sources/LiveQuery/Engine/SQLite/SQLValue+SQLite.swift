import Foundation
import GRDB
import GRDBSQLite
import LiveQueryCore

/// Values as SQLite and GRDB read and bind them.
extension SQLValue {
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
}
