import GRDB
import GRDBSQLite
import LiveQueryCore

extension Database {
    /// Runs `sql` with its `:name` placeholders bound to `arguments` exactly: GRDB binds text up
    /// to its first NUL (it hands SQLite a C string), so text holding NUL is bound here by its
    /// bytes. Without such text this is `execute(sql:arguments:)`; with it, `sql` must be one
    /// statement.
    package func execute(sql: String, exactly arguments: [String: SQLValue]) throws {
        var bound: [String: (any DatabaseValueConvertible)?] = [:]
        var withNUL: [String: [UInt8]] = [:]
        for (name, value) in arguments {
            if case let .text(text) = value, text.bytes.contains(0) || !text.isValidUTF8 {
                withNUL[name] = text.bytes
                bound[name] = DatabaseValue.null   // Bound again below, by its bytes.
            } else {
                bound[name] = value.databaseValue
            }
        }
        guard !withNUL.isEmpty else {
            try execute(sql: sql, arguments: StatementArguments(bound))
            return
        }
        let statement = try makeStatement(sql: sql)
        try statement.setArguments(StatementArguments(bound))
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (name, bytes) in withNUL {
            for prefix in [":", "@", "$"] {
                let index = sqlite3_bind_parameter_index(statement.sqliteStatement, prefix + name)
                guard index > 0 else { continue }
                let code = bytes.withUnsafeBufferPointer { buffer in
                    buffer.baseAddress.map { base in
                        base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                            sqlite3_bind_text(statement.sqliteStatement, index, $0, Int32(buffer.count), transient)
                        }
                    } ?? sqlite3_bind_text(statement.sqliteStatement, index, "", 0, transient)
                }
                guard code == SQLITE_OK else { throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "binding :\(name)", sql: sql) }
            }
        }
        try statement.execute()
    }
}

/// A SELECT's text arguments that GRDB cannot bind whole — text holding NUL, or not valid UTF-8 —
/// written into the SQL as literals of their bytes (`CAST(X'…' AS TEXT)`), so the query reads the
/// argument given, not its part before the NUL.
package enum ExactArguments {
    /// `sql` with each `:name`, `@name` or `$name` placeholder of such an argument replaced by its
    /// literal, and the arguments left to bind.
    /// - Complexity: O(n) for n bytes of SQL.
    package static func inliningText(sql: String, arguments: [String: SQLValue]) -> (sql: String, arguments: [String: SQLValue]) {
        let inlined = arguments.filter { _, value in
            if case let .text(text) = value { return text.bytes.contains(0) || !text.isValidUTF8 }
            return false
        }
        guard !inlined.isEmpty, let tokens = SQLTokenizer.tokens(sql) else { return (sql, arguments) }
        var bytes = Array(sql.utf8)
        for token in tokens.reversed() where token.kind == .parameter {
            guard let first = token.text.first, first != "?", let value = inlined[String(token.text.dropFirst())] else { continue }
            bytes.replaceSubrange(token.range, with: Array(value.sqlLiteral.utf8))
        }
        return (String(decoding: bytes, as: UTF8.self), arguments.filter { inlined[$0.key] == nil })
    }
}
