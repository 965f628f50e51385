import Foundation
import GRDB
import LiveQueryCore

/// One live query's reading of the change log (``ChangeTracking``): where it stands, which
/// entries are its own connection's (applied already, at their commit), its registered position,
/// and pruning. Lives on the writer's queue, with the query's core.
struct ChangeLogFollower {
    /// One logged key of a changed row.
    struct Entry {
        var table: String
        /// The key column (`nil`: the rowid; `"*"`: some row, unknown).
        var column: String?
        var value: SQLValue
    }

    enum Read {
        case entries([Entry])
        case refetch(RefetchReason.ExternalCommit)
    }

    let readerID = UUID().uuidString
    /// A TEMP table that a TEMP trigger fills with the sequence numbers of the entries this
    /// connection writes — within the writer's statement, so a statement or transaction that
    /// rolls back takes its numbers with it (they are handed out again).
    let ownTable: String
    let ownTrigger: String
    let expiry: Duration
    let isWritable: Bool
    private var generation: String?
    /// Every entry up to this one is accounted for.
    private(set) var appliedThrough: Int64
    /// Committed own entries past `appliedThrough`: skipped when read.
    private var own: Set<Int64> = []
    /// The last row of `ownTable` collected.
    private var ownRowsCollected: Int64 = 0
    /// The last row of `ownTable` deleted.
    private var ownRowsDeleted: Int64 = 0
    private var lastPositionWrite: ContinuousClock.Instant?
    private var lastWrittenPosition: Int64 = -1

    /// Whether `db` holds the change log.
    static func exists(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT count(*) = 3 FROM sqlite_master WHERE type = 'table' AND name IN (?, ?, ?)",
                          arguments: [ChangeTracking.logTable, ChangeTracking.readerTable, ChangeTracking.metaTable]) ?? false
    }

    /// Where a reader starts: the log's generation and the last sequence number handed out.
    struct Start: Equatable {
        var generation: String?
        var end: Int64
    }

    /// Where the log stands now: read before a fetch, so that a commit landing between the two is
    /// read again (its rows re-read, which changes nothing) rather than never. `nil` when the
    /// database has no log, or its tables cannot be read — which ``validate(_:)`` reports.
    static func start(_ db: Database) -> Start? {
        do {
            guard try exists(db) else { return nil }
            return Start(generation: try String.fetchOne(db, sql: "SELECT value FROM \(ChangeTracking.metaTable) WHERE key = 'generation'"),
                         end: try end(db))
        } catch {
            return nil
        }
    }

    /// Starts following the log from `start` (read before the query's fetch), or from its current
    /// end; `nil` when the database has none.
    init?(_ db: Database, source: UInt64, expiry: Duration, from start: Start? = nil) throws {
        guard try Self.exists(db) else { return nil }
        ownTable = "livelist_own_\(source)".quotedIdentifier
        ownTrigger = "livelist_\(source)_own".quotedIdentifier
        self.expiry = expiry
        isWritable = !db.configuration.readonly
        if let start {
            generation = start.generation
            appliedThrough = start.end
        } else {
            generation = try String.fetchOne(db, sql: "SELECT value FROM \(ChangeTracking.metaTable) WHERE key = 'generation'")
            appliedThrough = try Self.end(db)
        }
    }

    /// The last sequence number the log has handed out (entries up to it may have been pruned).
    static func end(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = ?), 0)", arguments: [ChangeTracking.logTable]) ?? 0
    }

    /// Reads nothing, but fails as reading would when the log's tables were altered.
    static func validate(_ db: Database) throws {
        _ = try Row.fetchAll(db, sql: "SELECT seq, tbl, col, val FROM \(ChangeTracking.logTable) LIMIT 0")
        _ = try Row.fetchAll(db, sql: "SELECT id, seq, expires FROM \(ChangeTracking.readerTable) LIMIT 0")
        _ = try Row.fetchAll(db, sql: "SELECT key, value FROM \(ChangeTracking.metaTable) LIMIT 0")
    }

    /// Installs the TEMP table and trigger that tell which entries this connection writes.
    func install(_ db: Database) throws {
        guard isWritable else { return }
        try db.execute(sql: """
            CREATE TEMP TABLE \(ownTable)(seq INTEGER NOT NULL);
            CREATE TEMP TRIGGER \(ownTrigger) AFTER INSERT ON main.\(ChangeTracking.logTable) BEGIN INSERT INTO \(ownTable)(seq) VALUES (NEW.seq); END
            """)
    }

    func uninstall(_ db: Database) throws {
        guard isWritable else { return }
        try db.execute(sql: "DROP TRIGGER IF EXISTS temp.\(ownTrigger); DROP TABLE IF EXISTS temp.\(ownTable)")
        try db.execute(sql: "DELETE FROM \(ChangeTracking.readerTable) WHERE id = ?", arguments: [readerID])
    }

    /// After this connection committed: the entries it wrote are its own.
    mutating func collectOwn(_ db: Database) throws {
        guard isWritable else { return }
        let statement = try db.cachedStatement(sql: "SELECT rowid, seq FROM temp.\(ownTable) WHERE rowid > ?")
        let rows = try Row.fetchAll(statement, arguments: [ownRowsCollected])
        for row in rows {
            ownRowsCollected = max(ownRowsCollected, row[0])
            own.insert(row[1])
        }
    }

    /// Rows of the own table collected and not yet deleted, to delete outside any transaction.
    var ownRowsToDelete: ClosedRange<Int64>? {
        ownRowsCollected - ownRowsDeleted >= 1_000 ? (ownRowsDeleted + 1)...ownRowsCollected : nil
    }

    mutating func ownRowsDeleted(through row: Int64) { ownRowsDeleted = row }

    /// No other connection committed since the last read: every entry past it is this
    /// connection's own.
    mutating func passOwnEntries() {
        if let last = own.max(), last > appliedThrough { appliedThrough = last }
        own = []
    }

    /// The entries other connections wrote since the last read — or why the log cannot say.
    mutating func read(_ db: Database) throws -> Read {
        let meta = try Row.fetchAll(db, sql: "SELECT key, value FROM \(ChangeTracking.metaTable)")
        let values = Dictionary(meta.compactMap { row -> (String, DatabaseValue)? in
            guard let key: String = row["key"] else { return nil }
            return (key, row["value"])
        }, uniquingKeysWith: { first, _ in first })
        let currentGeneration = values["generation"].flatMap { String.fromDatabaseValue($0) }
        let end = try Self.end(db)
        guard currentGeneration == generation, end >= appliedThrough else {
            generation = currentGeneration
            restart(at: end)
            return .refetch(.changeLogRecreated)
        }
        let pruned = values["pruned_through"].flatMap { Int64.fromDatabaseValue($0) } ?? 0
        guard pruned <= appliedThrough else {
            restart(at: end)
            return .refetch(.changeLogPruned)
        }
        var entries: [Entry] = []
        let statement = try db.cachedStatement(sql: "SELECT seq, tbl, col, val FROM \(ChangeTracking.logTable) WHERE seq > ? AND seq <= ? ORDER BY seq")
        try statement.setArguments([appliedThrough, end])
        let cursor = try Row.fetchCursor(statement)
        while let row = try cursor.next() {
            let seq: Int64 = row[0]
            if own.remove(seq) != nil { continue }
            guard let table: String = row[1] else { continue }
            entries.append(Entry(table: table.lowercased(), column: row[2], value: SQLValue(statement: statement.sqliteStatement, column: 3)))
        }
        appliedThrough = end
        own = own.filter { $0 > end }
        return .entries(entries)
    }

    private mutating func restart(at end: Int64) {
        appliedThrough = end
        own = []
        lastWrittenPosition = -1
    }

    /// The position to record now (with its expiry, in seconds since 1970), or `nil` when the
    /// last one is recent: at most once per quarter of the expiry, unless the position moved far.
    func positionDue(force: Bool = false) -> (id: String, seq: Int64, expires: Double)? {
        guard isWritable else { return nil }
        let due = lastPositionWrite.map { $0.duration(to: .now) > expiry / 4 } ?? true
        guard force || due || appliedThrough - lastWrittenPosition > 10_000 else { return nil }
        let seconds = Double(expiry.components.seconds) + Double(expiry.components.attoseconds) / 1e18
        return (readerID, appliedThrough, Date().timeIntervalSince1970 + seconds)
    }

    mutating func positionRecorded(_ seq: Int64) {
        lastPositionWrite = .now
        lastWrittenPosition = seq
    }

    /// Records a reader's position, forgets expired readers, and prunes the entries every live
    /// reader has passed. Its own transaction: static, so that the commit it makes (which the
    /// query's observer hears) does not overlap an access to the follower.
    static func record(_ position: (id: String, seq: Int64, expires: Double), _ db: Database) throws {
        try db.inTransaction {
            try db.execute(sql: "INSERT OR REPLACE INTO \(ChangeTracking.readerTable)(id, seq, expires) VALUES (?, ?, ?)",
                           arguments: [position.id, position.seq, position.expires])
            try db.execute(sql: "DELETE FROM \(ChangeTracking.readerTable) WHERE expires < ?", arguments: [Date().timeIntervalSince1970])
            let bound = try Int64.fetchOne(db, sql: "SELECT min(seq) FROM \(ChangeTracking.readerTable)") ?? position.seq
            let pruned = try Int64.fetchOne(db, sql: "SELECT value FROM \(ChangeTracking.metaTable) WHERE key = 'pruned_through'") ?? 0
            if bound > pruned {
                try db.execute(sql: "DELETE FROM \(ChangeTracking.logTable) WHERE seq <= ?", arguments: [bound])
                try db.execute(sql: "UPDATE \(ChangeTracking.metaTable) SET value = ? WHERE key = 'pruned_through'", arguments: [bound])
            }
            return .commit
        }
    }
}
