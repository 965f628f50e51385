import LiveQueryCore

/// How a change to a joined table reaches the result rows that meet the changed row: TEMP
/// triggers on the joined table run a lookup from the base table along the join's key equalities
/// (the query's own ON conjuncts, so SQLite compares as the query does) and report every base
/// rowid it finds — before the change for the old row, after it for the new one.
struct JoinLookup: Sendable {
    /// The joined table.
    let schema: TableSchema
    /// Its name in `from`.
    let alias: String
    /// `main.base AS b JOIN main.x AS x ON … JOIN main.t AS t ON …`: the tables from the base
    /// table to this one, joined by their key equalities.
    let from: String
    /// The base table's rowid in `from` (`"b".rowid`).
    let baseRowid: String
    /// The columns whose UPDATE can change the result (`nil`: any column).
    let updateColumns: [String]?
    /// The joined table's key column in the ON equality (`nil`: its rowid), as the change log
    /// names it.
    let keyColumn: String?
    /// The base rows whose foreign column equals given key values: this + placeholders + `)`.
    let keyLookupPrefix: String

    /// The condition that picks the joined table's row `row` (`OLD` or `NEW`) in `from`.
    func rowCondition(_ row: String) -> String {
        let alias = alias.quotedIdentifier
        if let rowid = schema.rowidName { return "\(alias).\(rowid) = \(row).\(rowid)" }
        return schema.primaryKey.map { "\(alias).\($0.quotedIdentifier) = \(row).\($0.quotedIdentifier)" }.joined(separator: " AND ")
    }

    /// The condition that picks, in `from`, the rows of the joined table that `row` conflicts
    /// with (rows an INSERT or UPDATE OR REPLACE is about to delete); `nil` when none can.
    func conflictCondition(_ row: String) -> String? {
        let table = "main." + schema.name.quotedIdentifier
        let alias = alias.quotedIdentifier
        var conditions = ChangeTriggers.conflictConditions(schema, row: row)
        if let rowid = schema.rowidName {
            conditions.insert("\(rowid) = \(row).\(rowid)", at: 0)
            return "\(alias).\(rowid) IN (SELECT \(rowid) FROM \(table) WHERE " + conditions.map { "(\($0))" }.joined(separator: " OR ") + ")"
        }
        guard !conditions.isEmpty else { return nil }
        let key = schema.primaryKey.map(\.quotedIdentifier)
        let qualified = key.map { "\(alias).\($0)" }
        return "(\(qualified.joined(separator: ", "))) IN (SELECT \(key.joined(separator: ", ")) FROM \(table) WHERE "
            + conditions.map { "(\($0))" }.joined(separator: " OR ") + ")"
    }

    /// The statement a trigger runs: reports every base rowid that meets the joined rows picked
    /// by `condition`.
    func lookup(touch: String, where condition: String) -> String {
        "SELECT \(touch)(\(baseRowid)) FROM \(from) WHERE \(condition);"
    }
}
