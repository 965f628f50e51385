import GRDB
import GRDBSQLite

extension LiveQuery {
    /// The names of the query's own columns, in the order of ``exactPayloads(of:reader:)``'s values.
    package var payloadColumnNames: [String] { core.index.current.layout.records?.columnNames ?? [] }

    /// The column values of `rows`, read with the request's own SQL and kept only where the row
    /// read now has the content token the result holds for it (``LiveRow/version``): a row that
    /// changed since the result was made is left out — the next update reloads it — so what is
    /// returned is exactly the row at the result's version, whatever other connections or
    /// processes committed meanwhile. Rows that left the table are left out too.
    ///
    /// - Complexity: one statement per 500 rows, on `reader`'s read path; O(r) work for r rows.
    package func exactPayloads(of rows: [LiveRow<ID>], reader: any DatabaseReader) async throws -> [ID: [SQLValue]] {
        let index = core.index
        guard let records = index.current.layout.records, !rows.isEmpty else { return [:] }
        var keys: [DatabaseValue] = []
        var wanted: [SQLValue: LiveRow<ID>] = [:]
        for row in rows {
            let identity = row.id.identityValue
            let key: SQLValue
            if records.keyIsRowid {
                guard let entry = index.entry(ofIdentity: identity) else { continue }
                key = .integer(entry.rowid)
            } else {
                key = identity
            }
            guard let value = key.databaseValue, wanted[key] == nil else { continue }
            wanted[key] = row
            keys.append(value)
        }
        guard !keys.isEmpty else { return [:] }
        let rowsByKey = wanted
        let batches = stride(from: 0, to: keys.count, by: 500).map { Array(keys[$0..<min($0 + 500, keys.count)]) }
        return try await reader.read { db in
            var payloads: [ID: [SQLValue]] = [:]
            for batch in batches {
                let sql = records.payloadPrefix + Array(repeating: "?", count: batch.count).joined(separator: ",") + ")"
                let statement = try db.cachedStatement(sql: sql)
                var arguments = records.arguments
                arguments += StatementArguments(batch)
                try statement.setArguments(arguments)
                let sqlite = statement.sqliteStatement
                let keyColumn = records.keyIsRowid ? (records.payloadColumns.rowid ?? 0) : Int32(statement.columnCount - 1)
                let cursor = try Row.fetchCursor(statement)
                while try cursor.next() != nil {
                    guard let row = rowsByKey[SQLValue(statement: sqlite, column: keyColumn)] else { continue }
                    let entry = records.payloadColumns.entry(from: sqlite, ordinal: 0)
                    guard entry.token == row.version else { continue }
                    payloads[row.id] = records.valueColumns.map { SQLValue(statement: sqlite, column: $0) }
                }
            }
            return payloads
        }
    }
}
