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

    /// A ``RowCache`` committed loader that makes `Record`s of the rows this query re-read at
    /// their commit — with the request's own columns and row adapter, as
    /// ``recordLoader(as:reader:)`` reads them — so that ``RowCache/update(with:)`` holds the
    /// rows an update changed at their new versions, and a visible row that changed shows its new
    /// record in the batch that reloads it, without a placeholder or a page query.
    ///
    /// ```swift
    /// import Foundation
    /// import GRDB
    /// import LiveQuery
    ///
    /// func conversationCache(_ query: LiveQuery<UUID>, _ dbPool: DatabasePool) -> RowCache<UUID, ConversationRow> {
    ///     RowCache(pageSize: 50, loader: query.recordLoader(as: ConversationRow.self, reader: dbPool),
    ///              committed: query.committedRecords(as: ConversationRow.self))
    /// }
    /// ```
    ///
    /// From the first call on, the re-read of changed rows at each commit also reads the query's
    /// own columns, and the rows of the latest commits (up to 1,000) are kept. It reads nothing
    /// itself: rows the query did not re-read at the version asked for — a refetch, a row changed
    /// again since — are absent, and load with their page. A row that does not decode as `Record`
    /// fails alone, as with the record loader.
    ///
    /// - Complexity: O(r) lookups and r decodings for r rows asked for.
    public func committedRecords<Record: FetchableRecord & Sendable>(as type: Record.Type) -> RowCache<ID, Record>.CommittedLoader {
        committedRecords { row in try Record(row: row) }
    }

    /// A ``RowCache`` committed loader that makes each row this query re-read at its commit into
    /// content with `decode`, given the row as the request's own SQL and row adapter lay it out:
    /// for a cache whose loader decodes rows by hand (``RowCache/tableLoader(reader:table:identity:columns:decode:)``),
    /// as ``committedRecords(as:)`` is for `FetchableRecord`s. A row `decode` throws for fails alone.
    ///
    /// - Complexity: O(r) lookups and r decodings for r rows asked for.
    public func committedRecords<Record: Sendable>(_ decode: @escaping @Sendable (Row) throws -> Record) -> RowCache<ID, Record>.CommittedLoader {
        let committed = core.committed
        committed.startKeeping()
        return { rows in
            var records: [ID: Result<Record, any Error>] = [:]
            for (id, row) in committed.rows(of: rows) { records[id] = Result { try decode(row) } }
            return records
        }
    }
}

extension RowCache where Content: FetchableRecord {
    /// A cache of `query`'s rows decoded as `Content` records (see
    /// ``LiveQuery/recordLoader(as:reader:)``); the rows an update changed are made from what the
    /// query re-read at their commit (``LiveQuery/committedRecords(as:)``).
    public convenience init(query: LiveQuery<ID>, reader: any DatabaseReader, pageSize: Int = 50, maximumPages: Int = 40) {
        self.init(pageSize: pageSize, maximumPages: maximumPages, loader: query.recordLoader(as: Content.self, reader: reader),
                  committed: query.committedRecords(as: Content.self))
    }
}
