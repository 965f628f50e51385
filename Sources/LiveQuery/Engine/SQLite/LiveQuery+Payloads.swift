import GRDB
import GRDBSQLite
import LiveQueryCore

extension LiveQuery {
    /// The names of the query's own columns, in the order of ``exactPayloads(of:reader:)``'s values.
    package var payloadColumnNames: [String] { core.index.current.layout.recordQuery?.columnNames ?? [] }

    /// How the query orders its result, stated on its own columns: `nil` for a refetched query,
    /// or when a sort term is not one of the SELECT's columns as stored.
    public var order: ResultOrder? { core.index.current.layout.resultOrder }

    /// The rows' table, identity and filter, stated exactly: `nil` for a refetched query, a join,
    /// an identity that is not a column of the table, or a WHERE that is not comparisons of the
    /// table's columns with values joined by AND (see ``LiveQueryCore/ResultSource``).
    public var source: ResultSource? { core.index.current.layout.resultSource }

    /// The column values of `rows`, read with the request's own SQL and kept only where the row
    /// read now has the content token the result holds for it (``LiveRow/version``): a row that
    /// changed since the result was made is left out — the next update reloads it — so what is
    /// returned is exactly the row at the result's version, whatever other connections or
    /// processes committed meanwhile. Rows that left the table are left out too.
    ///
    /// - Complexity: one statement per 500 rows, on `reader`'s read path; O(r) work for r rows.
    package func exactPayloads(of rows: [LiveRow<ID>], reader: any DatabaseReader) async throws -> [ID: [SQLValue]] {
        let index = core.index
        let layout = index.current.layout
        guard let records = layout.recordQuery, !rows.isEmpty else { return [:] }
        let versions = Dictionary(rows.map { ($0.id, $0.version) }, uniquingKeysWith: { first, _ in first })
        let idsByKey = records.keys(of: versions.keys, in: index, layout: layout)
        guard !idsByKey.isEmpty else { return [:] }
        return try await reader.read { db in
            var payloads: [ID: [SQLValue]] = [:]
            try records.eachBatch(of: records.payloadPrefix, keys: Array(idsByKey.keys), db) { statement in
                let sqlite = statement.sqliteStatement
                let keyColumn = records.keyIsRowid ? (records.payloadColumns.rowid ?? 0) : Int32(statement.columnCount - 1)
                let cursor = try Row.fetchCursor(statement)
                while try cursor.next() != nil {
                    guard let id = idsByKey[SQLValue(statement: sqlite, column: keyColumn)], let version = versions[id] else { continue }
                    // Kept only at the result's version: a row changed since is reloaded by its commit.
                    guard records.payloadColumns.entry(from: sqlite, ordinal: 0).token == version else { continue }
                    payloads[id] = records.valueColumns.map { SQLValue(statement: sqlite, column: $0) }
                }
            }
            return payloads
        }
    }
}
