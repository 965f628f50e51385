import ListDiff

/// A live query, whatever its engine: SQLite's `LiveQuery` and PostgreSQL's `PostgresLiveQuery`
/// both are one. Code that shows, tests or serves a live query can take `some LiveQueryProtocol`
/// and work with either: the events and results, the newest result, the catch-up after a write,
/// the path updates take, and stopping.
///
/// ```swift
/// import ListDiff
/// import LiveQueryCore
///
/// /// Prints each change of any engine's live query, after catching up with the writes made so far.
/// func follow<Query: LiveQueryProtocol>(_ query: Query) async throws {
///     let result = try await query.upToDate()
///     print("\(result.count) rows, updated \(query.mode)")
///     for await event in query.events {
///         if case let .update(update) = event { print("\(update.changeset.changes.count) changes") }
///     }
/// }
/// ```
public protocol LiveQueryProtocol<ID>: AnyObject, Sendable {
    /// How the query identifies its rows.
    associatedtype ID: LiveIdentity
    /// What the engine's catch-up throws (`LiveQueryError` over SQLite, `PostgresLiveQueryError`
    /// over PostgreSQL).
    associatedtype Failure: Error

    /// Every change and failure from now on, starting with `.initial(latestResult)`; any number
    /// of consumers, each with its own sequence.
    var events: AsyncStream<LiveQueryEvent<ID>> { get }
    /// The newest result, then each later one (a consumer that falls behind skips to the newest).
    func results() -> AsyncStream<LiveResult<ID>>
    /// The newest result delivered.
    var latestResult: LiveResult<ID> { get }
    /// How updates are computed: row by row, or by reading the result again (and why).
    var mode: LiveUpdatePath { get }
    /// Rows read and refetches so far.
    var statistics: LiveQueryStatistics { get }
    /// The order the result is in, stated on its columns, when the engine can state it exactly.
    var order: ResultOrder? { get }
    /// What the rows are — one table's, identified by one of its columns, under a filter —
    /// when the engine can state it exactly: with a mutation's ``StatementEffect``s, what the
    /// mutation will do to the result (`nil`: not stated).
    var source: ResultSource? { get }
    /// The result once every transaction committed before the call is reflected: write, then
    /// `await` this to see the write.
    func upToDate() async throws(Failure) -> LiveResult<ID>
    /// Stops following the database; the sequences end and nothing is delivered after it.
    func cancel() async
}
