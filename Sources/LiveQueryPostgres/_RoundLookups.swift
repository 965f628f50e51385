import PostgresNIO

/// The lookups one round has run (a joined table's changed keys → the rows that meet them; an
/// aggregated table's changed rows → their groups), by statement and keys: queries that share a
/// SELECT and differ in their arguments ask the same, and read it once.
struct _RoundLookups {
    private var answers: [String: [PostgresRow]] = [:]

    /// The rows of `sql` with `keys` (text[]) as its only argument, read in the round's snapshot
    /// once per round.
    mutating func rows(_ sql: String, keys: [String], _ session: _PostgresSession) async throws(PostgresLiveQueryError) -> [PostgresRow] {
        let key = sql + "\u{0}" + keys.joined(separator: "\u{0}")
        if let rows = answers[key] { return rows }
        var binds = PostgresBindings()
        binds.append(keys)
        let rows = try await session.rows(sql, binds)
        answers[key] = rows
        return rows
    }
}
