import GRDB
import LiveQueryCore

extension QueryPlan.RecordQuery {
    /// The keys the record and payload statements find `ids` by — the base table's rowid, or the
    /// identity — for the rows the index holds, one identity per key.
    ///
    /// - Complexity: O(k log n) for k identities in a result of n rows.
    func keys<ID: LiveIdentity>(of ids: some Sequence<ID>, in index: LiveIndex, layout: ResultLayout) -> [SQLValue: ID] {
        var keys: [SQLValue: ID] = [:]
        for id in ids {
            guard let entry = index.entry(ofIdentity: id.identityValue) else { continue }
            let key: SQLValue = keyIsRowid ? .integer(entry.rowid) : layout.identity(of: entry)
            guard key.databaseValue != nil else { continue }
            keys[key] = id
        }
        return keys
    }

    /// Runs `prefix` with an IN list of `keys`, 500 at a time (SQLite's variable limit is far
    /// above), handing each prepared statement to `body`.
    func eachBatch(of prefix: String, keys: [SQLValue], _ db: Database, _ body: (Statement) throws -> Void) throws {
        let values = keys.compactMap(\.databaseValue)
        for start in stride(from: 0, to: values.count, by: 500) {
            let batch = values[start..<min(start + 500, values.count)]
            let statement = try db.cachedStatement(sql: prefix + Array(repeating: "?", count: batch.count).joined(separator: ",") + ")")
            var arguments = self.arguments
            arguments += StatementArguments(Array(batch))
            try statement.setArguments(arguments)
            try body(statement)
        }
    }
}
