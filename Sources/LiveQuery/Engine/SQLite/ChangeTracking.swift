import GRDB
import LiveQueryCore

/// The change log every writer feeds — this app, its extensions, other processes, the `sqlite3`
/// shell — so that live queries follow other connections' commits incrementally instead of
/// refetching. Opt-in: LiveList never changes a schema on its own. Install it in a migration:
///
/// ```swift
/// import GRDB
/// import LiveQuery
///
/// func migrate(_ dbPool: DatabasePool) throws {
///     var migrator = DatabaseMigrator()
///     migrator.registerMigration("livelist change tracking") { db in
///         try ChangeTracking.install(on: db, tables: ["conversation", "contact"])
///     }
///     try migrator.migrate(dbPool)
/// }
/// ```
///
/// Persistent triggers on each table append the rows every INSERT, UPDATE and DELETE touches —
/// their rowid and the values of their single-column unique keys, before and after, and the rows a
/// REPLACE deletes — to `livelist_change_log`, in the writer's own transaction (a rolled-back
/// transaction leaves nothing). A live query whose tables are all tracked reads the entries past the
/// last one it applied when another connection commits — woken by file-change notifications of the
/// database and its WAL, with `PRAGMA data_version` polling as the fallback — and feeds those rows
/// through the path its own commits take. Its own commits are not applied twice.
///
/// The log is bounded: each live query records its position in `livelist_change_reader` with an
/// expiry it renews, and entries every live reader has passed are deleted. A reader whose position
/// expired and was pruned past (a process suspended for long), a log dropped or recreated, or a
/// schema change (a migration, VACUUM) makes the query refetch once, with the reason in
/// ``LiveQueryUpdate/path``, and go on incrementally.
///
/// The triggers cost each write to a tracked table one or two small inserts (measured by
/// `livelist bench`: `trigger_overhead_us` of `live.external.1m`).
public enum ChangeTracking {
    static let logTable = "livelist_change_log"
    static let readerTable = "livelist_change_reader"
    static let metaTable = "livelist_change_meta"

    /// Creates the log (if it does not exist) and the triggers that feed it from `tables`
    /// (replacing LiveList's triggers on them, so it is safe to run again after a table changed).
    /// Run it in a migration, in the app that owns the schema.
    public static func install(on db: Database, tables: [String]) throws(LiveQueryError) {
        do {
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS \(logTable)(seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, col TEXT, val);
                CREATE TABLE IF NOT EXISTS \(readerTable)(id TEXT PRIMARY KEY, seq INTEGER NOT NULL, expires REAL NOT NULL);
                CREATE TABLE IF NOT EXISTS \(metaTable)(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
                INSERT OR IGNORE INTO \(metaTable)(key, value) VALUES ('generation', lower(hex(randomblob(16)))), ('pruned_through', 0);
                """)
            for table in tables {
                guard let schema = try TableSchema.read(table, db) else { throw LiveQueryError.unknownTable(table) }
                for sql in Self.dropTriggers(schema.name) { try db.execute(sql: sql) }
                for sql in Self.createTriggers(schema) { try db.execute(sql: sql) }
            }
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
    }

    /// Removes the triggers from `tables` (all tracked tables when `nil`) and, when no table is
    /// tracked any more, the log.
    public static func uninstall(on db: Database, tables: [String]? = nil) throws(LiveQueryError) {
        do {
            let tracked = try trackedTables(db)
            for table in tables ?? Array(tracked) {
                for sql in Self.dropTriggers(table) { try db.execute(sql: sql) }
            }
            if try trackedTables(db).isEmpty {
                try db.execute(sql: "DROP TABLE IF EXISTS \(logTable); DROP TABLE IF EXISTS \(readerTable); DROP TABLE IF EXISTS \(metaTable)")
            }
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
    }

    /// What a dropped log with triggers still on `tables` means, and what to do.
    static func orphanedTriggers(_ tables: [String]) -> String {
        "the change log \(logTable) was dropped while LiveList's triggers on \(tables.joined(separator: ", ")) still write to it: every write "
            + "to those tables fails (no such table: main.\(logTable)) until ChangeTracking.install(on:tables:) creates the log again, "
            + "or ChangeTracking.uninstall(on:tables:) removes the triggers (drop the log only through it)"
    }

    /// The tables (lowercased) whose every LiveList trigger is in place.
    static func trackedTables(_ db: Database) throws -> Set<String> {
        let names = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'livelist_log_%'")
        var kinds: [String: Set<String>] = [:]
        for name in names {
            guard let separator = name.lastIndex(of: "_") else { continue }
            let table = String(name[name.index(name.startIndex, offsetBy: "livelist_log_".count)..<separator])
            kinds[table.lowercased(), default: []].insert(String(name[name.index(after: separator)...]))
        }
        return Set(kinds.filter { $0.value.isSuperset(of: ["insert", "delete", "update", "updateold"]) }.keys)
    }

    static func triggerName(_ table: String, _ kind: String) -> String {
        "livelist_log_\(table)_\(kind)".quotedIdentifier
    }

    static func dropTriggers(_ table: String) -> [String] {
        ["insert", "delete", "update", "updateold", "replace", "updatereplace"].map { "DROP TRIGGER IF EXISTS \(triggerName(table, $0))" }
    }

    /// What is logged for a row: its rowid (`col` NULL) and its single-column unique keys, as
    /// (the `col` literal, the column as SQL). A table with neither logs `'*'`: any change to it
    /// makes its readers refetch.
    static func loggedKeys(_ schema: TableSchema) -> [(label: String, column: String?)] {
        var keys: [(String, String?)] = []
        if let rowid = schema.rowidName { keys.append(("NULL", rowid)) }
        for index in schema.uniqueIndexes where index.predicate == nil && index.terms.count == 1 {
            guard case let .column(column, _) = index.terms[0], column != schema.rowidAlias,
                  !keys.contains(where: { $0.1 == column.quotedIdentifier }) else { continue }
            keys.append((literal(column), column.quotedIdentifier))
        }
        if keys.isEmpty { keys.append(("'*'", nil)) }
        return keys
    }

    static func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

    static func createTriggers(_ schema: TableSchema) -> [String] {
        let table = schema.name
        let quoted = table.quotedIdentifier
        let name = literal(table)
        let keys = loggedKeys(schema)
        let insertLog = "INSERT INTO \(logTable)(tbl, col, val) VALUES "
        func values(_ row: String) -> String {
            keys.map { "(\(name), \($0.label), \($0.column.map { "\(row).\($0)" } ?? "NULL"))" }.joined(separator: ", ")
        }
        /// Logs the keys of the rows `conditions` (over the table's columns) pick.
        func logRows(where conditions: [String]) -> String {
            keys.map { key in
                "INSERT INTO \(logTable)(tbl, col, val) SELECT \(name), \(key.label), \(key.column ?? "NULL") FROM \(quoted) WHERE "
                    + conditions.map { "(\($0))" }.joined(separator: " OR ") + ";"
            }.joined(separator: " ")
        }
        // An UPDATE that changes a key logs the old one too, and may delete rows by REPLACE.
        let whenKeyChanges = ChangeTriggers.whenKeysChange(schema, also: keys.compactMap { $0.column.map { "NEW.\($0) IS NOT OLD.\($0)" } })
        var triggers = [
            "CREATE TRIGGER \(triggerName(table, "insert")) AFTER INSERT ON \(quoted) BEGIN \(insertLog)\(values("NEW")); END",
            "CREATE TRIGGER \(triggerName(table, "delete")) AFTER DELETE ON \(quoted) BEGIN \(insertLog)\(values("OLD")); END",
            "CREATE TRIGGER \(triggerName(table, "update")) AFTER UPDATE ON \(quoted) BEGIN \(insertLog)\(values("NEW")); END",
            "CREATE TRIGGER \(triggerName(table, "updateold")) AFTER UPDATE ON \(quoted)\(whenKeyChanges) BEGIN \(insertLog)\(values("OLD")); END",
        ]
        // The rows a REPLACE is about to delete: no delete trigger fires for them.
        var conflicts = ChangeTriggers.conflictConditions(schema, row: "NEW")
        if let rowid = schema.rowidName { conflicts.insert("\(rowid) = NEW.\(rowid)", at: 0) }
        if !conflicts.isEmpty {
            triggers.append("CREATE TRIGGER \(triggerName(table, "replace")) BEFORE INSERT ON \(quoted) BEGIN \(logRows(where: conflicts)) END")
            triggers.append("CREATE TRIGGER \(triggerName(table, "updatereplace")) BEFORE UPDATE ON \(quoted)\(whenKeyChanges) BEGIN \(logRows(where: conflicts)) END")
        }
        return triggers
    }
}
