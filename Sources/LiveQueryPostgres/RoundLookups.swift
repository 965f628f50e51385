import PostgresNIO

/// The lookups one round has run (a joined table's changed keys → the rows that meet them; an
/// aggregated table's changed rows → their groups), by statement and keys: queries that share a
/// SELECT and differ in their arguments ask the same, and read it once. A lookup can be sent
/// before it is asked for (``send(_:keys:_:)``), so that a round's lookups wait behind each other
/// on the connection, not one after another on the round.
struct RoundLookups {
    private var answers: [String: PendingRows<PostgresRow>] = [:]

    /// Sends the statement `sql` with `keys` (text[]) as its only argument, unless this round has;
    /// its rows to come.
    @discardableResult
    mutating func send(_ sql: String, keys: [String], _ session: PostgresSession) -> PendingRows<PostgresRow> {
        let key = sql + "\u{0}" + keys.joined(separator: "\u{0}")
        if let sent = answers[key] { return sent }
        let sent = session.submit(prepared: sql, StatementParameters(texts: keys)) { $0 }
        answers[key] = sent
        return sent
    }

    /// The rows of `sql` with `keys` (text[]) as its only argument, read in the round's snapshot
    /// once per round.
    mutating func rows(_ sql: String, keys: [String], _ session: PostgresSession) async throws(PostgresLiveQueryError) -> [PostgresRow] {
        try await send(sql, keys: keys, session).value()
    }
}
