import GRDB
import LiveQueryCore

extension LiveQuery {
    /// A ``RowCache`` loader that reads this query's rows as `Record`s, with the request's own
    /// SQL — its joins, its filter and, for a GRDB request, its row adapter (so
    /// `including(required:)` scopes decode) — restricted to the rows asked for: by the base
    /// table's rowid on the incremental path, by identity otherwise. One query per page, on
    /// `reader`'s read path, never on the caller's thread. After ``setRequest(_:)`` it reads
    /// with the new request.
    ///
    /// ```swift
    /// import Foundation
    /// import GRDB
    /// import LiveQuery
    ///
    /// func conversations(_ query: LiveQuery<UUID>, _ dbPool: DatabasePool) -> RowCache<UUID, ConversationRow> {
    ///     RowCache(pageSize: 50, loader: query.recordLoader(as: ConversationRow.self, reader: dbPool))
    /// }
    /// ```
    ///
    /// A row that left the result since the cache asked is simply not returned. A row that does
    /// not decode as `Record` fails alone (the cache shows it failed, with GRDB's message); the
    /// rest of its page loads.
    public func recordLoader<Record: FetchableRecord & Sendable>(as type: Record.Type, reader: any DatabaseReader) -> RowCache<ID, Record>.RowLoader {
        let index = core.index
        return { ids in
            let layout = index.current.layout
            guard let records = layout.recordQuery else { return [:] }
            let idsByKey = records.keys(of: ids, in: index, layout: layout)
            guard !idsByKey.isEmpty else { return [:] }
            return try await reader.read { db in
                var loaded: [ID: Result<Record, any Error>] = [:]
                try records.eachBatch(of: records.prefix, keys: Array(idsByKey.keys), db) { statement in
                    let keyColumn = Int32(statement.columnCount - 1)
                    let cursor = try Row.fetchCursor(statement, adapter: records.adapter)
                    while let row = try cursor.next() {
                        guard let id = idsByKey[SQLValue(statement: statement.sqliteStatement, column: keyColumn)] else { continue }
                        loaded[id] = Result { try Record(row: row) }
                    }
                }
                return loaded
            }
        }
    }
}

extension RowCache where Content: FetchableRecord {
    /// A cache of `query`'s rows decoded as `Content` records (see
    /// ``LiveQuery/recordLoader(as:reader:)``).
    public convenience init(query: LiveQuery<ID>, reader: any DatabaseReader, pageSize: Int = 50, maximumPages: Int = 40) {
        self.init(pageSize: pageSize, maximumPages: maximumPages, loader: query.recordLoader(as: Content.self, reader: reader))
    }
}
