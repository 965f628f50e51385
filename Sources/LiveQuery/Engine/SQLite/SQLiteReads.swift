import GRDB
import LiveQueryCore

/// SQLite's side of the engine seam (``EngineReads``): a plan's statements run on a connection.
/// A read that fails because the schema changed since the plan was made throws
/// ``LiveQueryError/schemaChanged(_:)``, whichever step of the core asked for it.
struct SQLiteReads: EngineReads {
    let plan: QueryPlan
    let db: Database
    /// The schema's version when the plan was made; `nil` when unknown (the first fetch).
    var plannedSchemaVersion: Int?
    /// Where the rows re-read at a commit are kept for row caches, once one asked (`nil`: not kept).
    var committed: CommittedRows?

    /// Classifies a failure of a statement: one that fails once the schema changed since the
    /// query planned it is ``LiveQueryError/schemaChanged(_:)`` — by the schema's version, not by
    /// SQLite's message.
    static func classify(_ failure: LiveQueryError, _ db: Database, plannedSchemaVersion: Int?) -> LiveQueryError {
        guard case let .database(databaseFailure) = failure, (databaseFailure.error as? DatabaseError)?.resultCode == .SQLITE_ERROR,
              let planned = plannedSchemaVersion else { return failure }
        do {
            guard let now = try Int.fetchOne(db, sql: "PRAGMA schema_version"), now != planned else { return failure }
            return .schemaChanged(databaseFailure)
        } catch {
            return failure   // unreadable, the version cannot tell: the failure goes as it is
        }
    }

    func reread(_ keys: [Int64]) throws(LiveQueryError) -> [IndexEntry] {
        // Once a row cache asked for them, the same statement also reads the query's own columns
        // (the payload read, which has the re-read's columns first), and the rows are kept for it.
        let keeping = committed?.isKeeping == true && plan.isIncremental ? plan.layout.recordQuery.flatMap { $0.keyIsRowid ? $0 : nil } : nil
        let prefix = keeping?.payloadPrefix ?? plan.rereadPrefixSQL
        let adapter = keeping.map { QueryColumnsAdapter(columns: Int($0.valueColumns.lowerBound)..<Int($0.valueColumns.upperBound), base: $0.adapter) }
        var found: [IndexEntry] = []
        var kept: [(identity: SQLValue, token: UInt64, row: Row)] = []
        var offset = 0
        while offset < keys.count {
            let batch = keys[offset..<min(offset + 500, keys.count)]
            offset += batch.count
            let sql = prefix + Array(repeating: "?", count: batch.count).joined(separator: ",") + ")"
            var arguments = plan.arguments
            arguments += StatementArguments(batch.map { $0 as any DatabaseValueConvertible })
            do {
                let statement = try db.cachedStatement(sql: sql)
                try statement.setArguments(arguments)
                // An adapter that cannot lay out the columns keeps nothing (the rows load with
                // their pages); it never fails the query.
                let adapted = adapter.flatMap { try? Row.fetchCursor(statement, adapter: $0) }
                let cursor = try adapted ?? Row.fetchCursor(statement)
                while let row = try cursor.next() {
                    let entry = plan.entry(from: statement.sqliteStatement, ordinal: 0)
                    found.append(entry)
                    if adapted != nil {
                        kept.append((plan.layout.identity(of: entry), entry.token, row.copy()))
                    }
                }
            } catch {
                throw Self.classify(LiveQueryError.from(error, sql: sql, arguments: arguments), db, plannedSchemaVersion: plannedSchemaVersion)
            }
        }
        committed?.keep(kept)
        return found
    }

    /// Every row in order. When the result may be large, the cheaper of SQLite's plans is chosen
    /// first (see ``QueryPlan/prefersTableScan(_:)``).
    func fetchAll(into builder: inout IndexBuilder, mayBeLarge: Bool) throws(LiveQueryError) {
        let scan = mayBeLarge && plan.prefersTableScan(db)
        try read(sql: scan ? plan.scanningFetchSQL : plan.fetchSQL) { builder.append($0) }
    }

    /// The first `limit` rows in order (the first screen, and small results).
    func fetchFirst(_ limit: Int? = nil) throws(LiveQueryError) -> [IndexEntry] {
        var entries: [IndexEntry] = []
        try read(sql: limit.map { plan.fetchSQL(limit: $0) } ?? plan.fetchSQL) { entries.append($0) }
        return entries
    }

    private func read(sql: String, _ body: (IndexEntry) -> Void) throws(LiveQueryError) {
        do {
            let statement = try db.cachedStatement(sql: sql)
            try statement.setArguments(plan.arguments)
            let cursor = try Row.fetchCursor(statement)
            var ordinal: Int64 = 0
            while try cursor.next() != nil {
                body(plan.entry(from: statement.sqliteStatement, ordinal: ordinal))
                ordinal += 1
            }
        } catch {
            throw Self.classify(LiveQueryError.from(error, sql: sql, arguments: plan.arguments), db,
                                plannedSchemaVersion: plannedSchemaVersion)
        }
    }
}
