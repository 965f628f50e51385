import GRDB
import LiveQueryCore

/// TEMP triggers on the query's own connection that report what SQLite's update hook leaves out
/// (docs/SQLITE-FACTS.md, change tracking §3 and §6): the old rowid of an UPDATE that changes it, the
/// rows a REPLACE is about to delete because they conflict on a unique index, the result rows
/// that meet a changed row of a joined table, and any change to a WITHOUT ROWID table the query
/// reads. They call a per-query SQL function with each base rowid (or NULL for "refetch"); the
/// live query re-reads those rows at commit.
///
/// TEMP triggers live in the connection's temporary schema: the database file and its schema are
/// never touched, other connections never see them, and they go when the query stops.
struct ChangeTriggers: Sendable {
    let functionName: String
    let create: [String]
    let drop: [String]

    /// The triggers that follow `schema`'s rows (when given: the incremental path), the rows
    /// that meet changed rows of joined tables (`joins`), and those that signal any change to
    /// `signalTables` (tables without row events); `nil` when none is needed.
    init?(schema: TableSchema?, joins: [JoinLookup], signalTables: [String], source: UInt64) {
        functionName = "livelist_touch_\(source)"
        var create: [String] = []
        var drop: [String] = []
        let prefix = "livelist_\(source)_"
        let touch = functionName
        func add(_ name: String, _ timing: String, on table: String, when: String = "", _ body: [String]) {
            let quoted = (prefix + name).quotedIdentifier
            create.append("CREATE TEMP TRIGGER \(quoted) \(timing) ON main.\(table.quotedIdentifier)\(when) BEGIN \(body.joined(separator: " ")) END")
            drop.append("DROP TRIGGER IF EXISTS temp.\(quoted)")
        }
        for (number, table) in signalTables.enumerated() {
            for event in ["INSERT", "UPDATE", "DELETE"] {
                add("signal_\(number)_\(event.lowercased())", "AFTER \(event)", on: table, ["SELECT \(touch)(NULL);"])
            }
        }
        for (number, join) in joins.enumerated() {
            let table = join.schema.name
            let of = join.updateColumns.map { " OF " + $0.map(\.quotedIdentifier).joined(separator: ", ") } ?? ""
            add("join_\(number)_insert", "AFTER INSERT", on: table, [join.lookup(touch: touch, where: join.rowCondition("NEW"))])
            if let conflicts = join.conflictCondition("NEW") {
                add("join_\(number)_replace", "BEFORE INSERT", on: table, [join.lookup(touch: touch, where: conflicts)])
            }
            add("join_\(number)_delete", "BEFORE DELETE", on: table, [join.lookup(touch: touch, where: join.rowCondition("OLD"))])
            var before = [join.lookup(touch: touch, where: join.rowCondition("OLD"))]
            if let conflicts = join.conflictCondition("NEW") { before.append(join.lookup(touch: touch, where: conflicts)) }
            add("join_\(number)_update_old", "BEFORE UPDATE\(of)", on: table, before)
            add("join_\(number)_update_new", "AFTER UPDATE\(of)", on: table, [join.lookup(touch: touch, where: join.rowCondition("NEW"))])
        }
        guard let schema, let rowid = schema.rowidName, !schema.isWithoutRowid else {
            guard !create.isEmpty else { return nil }
            self.create = create
            self.drop = drop
            return
        }
        let table = "main." + schema.name.quotedIdentifier
        let conflicts = Self.conflictConditions(schema, row: "NEW").map { "SELECT \(touch)(\(rowid)) FROM \(table) WHERE \($0);" }
        if !conflicts.isEmpty { add("insert", "BEFORE INSERT", on: schema.name, conflicts) }
        // Before an UPDATE that changes the rowid or a unique value: the old rowid (the update hook
        // reports the new one only) and the rows a REPLACE will delete.
        let when = Self.whenKeysChange(schema, also: ["NEW.\(rowid) IS NOT OLD.\(rowid)"])
        add("update", "BEFORE UPDATE", on: schema.name, when: when, ["SELECT \(touch)(OLD.\(rowid)), \(touch)(NEW.\(rowid));"] + conflicts)
        self.create = create
        self.drop = drop
    }

    /// ` WHEN …` for an UPDATE trigger that must fire only when one of `also` or a column of a
    /// unique index changes (rows a REPLACE may delete); empty — always — when an index has
    /// expressions or a predicate, or there is nothing to compare.
    static func whenKeysChange(_ schema: TableSchema, also: [String]) -> String {
        var changed = also
        for index in schema.uniqueIndexes {
            guard index.predicate == nil else { return "" }
            for term in index.terms {
                guard case let .column(column, _) = term else { return "" }
                changed.append("NEW.\(column.quotedIdentifier) IS NOT OLD.\(column.quotedIdentifier)")
            }
        }
        return changed.isEmpty ? "" : " WHEN " + changed.joined(separator: " OR ")
    }

    /// For each unique index of `schema`, the condition (over the table's bare column names)
    /// that picks the row the values of `row` (`NEW`) conflict with.
    static func conflictConditions(_ schema: TableSchema, row: String) -> [String] {
        schema.uniqueIndexes.map { index in
            var condition: String
            if index.terms.allSatisfy({ if case .column = $0 { true } else { false } }) {
                condition = index.terms.map { term -> String in
                    guard case let .column(column, collation) = term else { return "0" }
                    return "\(column.quotedIdentifier) COLLATE \(collation) = \(row).\(column.quotedIdentifier)"
                }.joined(separator: " AND ")
            } else {
                // Expressions: evaluate them on the new values through a one-row subquery
                // that names the new values like the table's columns.
                let terms = index.terms.map { term -> String in
                    switch term {
                    case let .column(column, collation): "\(column.quotedIdentifier) COLLATE \(collation)"
                    case let .expression(sql): "(\(sql))"
                    }
                }
                let newValues = schema.columns.map { "\(row).\($0.name.quotedIdentifier) AS \($0.name.quotedIdentifier)" }.joined(separator: ", ")
                condition = "(\(terms.joined(separator: ", "))) = (SELECT \(terms.joined(separator: ", ")) FROM (SELECT \(newValues)))"
            }
            if let predicate = index.predicate { condition = "(\(condition)) AND (\(predicate))" }
            return condition
        }
    }

    /// Registers the function and creates the triggers; `touch` receives each rowid, or `nil`
    /// when a table without row events changed.
    func install(_ db: Database, touch: @escaping @Sendable (Int64?) -> Void) throws {
        db.add(function: DatabaseFunction(functionName, argumentCount: 1, pure: false) { values in
            touch(Int64.fromDatabaseValue(values[0]))
            return nil
        })
        for sql in create { try db.execute(sql: sql) }
    }

    /// Drops the triggers and the function (when the query stops).
    func uninstall(_ db: Database) throws {
        for sql in drop { try db.execute(sql: sql) }
        db.remove(function: DatabaseFunction(functionName, argumentCount: 1, pure: false) { _ in nil })
    }
}
