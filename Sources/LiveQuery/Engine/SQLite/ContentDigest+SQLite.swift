import GRDB
import GRDBSQLite
import LiveQueryCore

/// Digests of values read straight from SQLite's statements.
extension ContentDigest {
    /// Combines column `index` of the current row of `statement`, read as stored (same result
    /// as `combine(SQLValue)` for the same value), without copying it.
    mutating func combine(column index: Int32, of statement: SQLiteStatement) {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER:
            combine(word: 2)
            combine(word: UInt64(bitPattern: sqlite3_column_int64(statement, index)))
        case SQLITE_FLOAT:
            combine(word: 3)
            combine(word: sqlite3_column_double(statement, index).bitPattern)
        case SQLITE_TEXT:
            let pointer = sqlite3_column_text(statement, index)
            let count = Int(sqlite3_column_bytes(statement, index))
            combine(word: 4)
            combine(bytes: UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : count))
        case SQLITE_BLOB:
            let pointer = sqlite3_column_blob(statement, index)
            let count = Int(sqlite3_column_bytes(statement, index))
            combine(word: 5)
            combine(bytes: UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : count))
        default:
            combine(word: 1)
        }
    }
}
