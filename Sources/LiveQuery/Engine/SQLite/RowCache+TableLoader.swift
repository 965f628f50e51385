import GRDB
import LiveQueryCore

/// The row cache's loader for a SQLite table.
extension RowCache {
    /// A loader that reads `columns` of `table` by identity (the rowid, or the `identity`
    /// column), one query per page, on the reader's read path (a pool's reader, a queue's serial
    /// queue) — never on the caller's thread.
    public static func tableLoader(
        reader: any DatabaseReader, table: String, identity: String? = nil, columns: [String],
        decode: @escaping @Sendable (Row) -> Content
    ) -> Loader {
        let identityExpression = identity?.quotedIdentifier ?? "rowid"
        let selected = (["\(identityExpression) AS \"livelist_identity\""] + columns.map(\.quotedIdentifier)).joined(separator: ", ")
        return { ids in
            try await reader.read { db in
                var values: [DatabaseValue] = []
                for id in ids {
                    guard let value = id.identityValue.databaseValue else { continue }
                    values.append(value)
                }
                let placeholders = Array(repeating: "?", count: values.count).joined(separator: ",")
                let sql = "SELECT \(selected) FROM \(table.quotedIdentifier) WHERE \(identityExpression) IN (\(placeholders))"
                var contents: [ID: Content] = [:]
                let statement = try db.makeStatement(sql: sql)
                try statement.setArguments(StatementArguments(values))
                let rows = try Row.fetchCursor(statement)
                while let row = try rows.next() {
                    guard let id = ID(identityValue: SQLValue(statement: statement.sqliteStatement, column: 0)) else { continue }
                    contents[id] = decode(row)
                }
                return contents
            }
        }
    }
}
