import ListDiff
import LiveQueryCore
import PostgresNIO

/// A query over PostgreSQL whose result follows the database: every committed transaction that
/// changes the result yields one changeset, computed from the rows it touched — re-read through
/// the query's own filter in the snapshot that sees the transaction — not by refetching.
///
/// Sorts over columns of integer, numeric, floating point, boolean, date, timestamp, uuid, bytea
/// and text types (text under the C, POSIX or ucs_basic collation) are kept incrementally; text
/// under any other collation, and other types, are ordered by the server: such a query refetches
/// on every commit that touches its table, with the reason in ``mode``. So do truncations, schema
/// changes, changes to other tables the filter reads, and transactions touching more than the
/// database's refetch threshold of rows.
///
/// Versions are commit positions (``version``, ``position(of:)``): after an update, the result
/// equals the query's result in a snapshot that sees exactly the transactions up to it.
public final class PostgresLiveQuery<ID: LiveIdentity>: Sendable {
    let runner: PostgresQueryRunner<ID>
    let database: PostgresLiveDatabase

    /// The result when the query opened.
    public let initialResult: LiveResult<ID>

    private init(runner: PostgresQueryRunner<ID>, database: PostgresLiveDatabase) {
        self.runner = runner
        self.database = database
        initialResult = runner.tracker.channel.latestResult
    }

    deinit {
        let (engine, runner) = (database.engine, runner)
        Task { await engine.close(runner) }
    }

    /// Validates `request` against the catalog, reads its result, and starts following it.
    ///
    /// A query followed row by row whose result has more than `firstScreenRows` rows returns with
    /// its first `firstScreenRows` (``LiveResult/isComplete`` is then `false`); the rest is read
    /// beside the rounds, in the same snapshot, and arrives as one update whose path is
    /// ``LiveUpdatePath/firstFetchCompleted``, with the commits made meanwhile applied.
    /// `nil` reads the whole result before returning.
    /// - Complexity: O(`firstScreenRows`) before returning; O(n) for a result of n rows in all.
    public static func open(_ request: PostgresLiveQueryRequest<ID>, in database: PostgresLiveDatabase, firstScreenRows: Int? = 200)
        async throws(PostgresLiveQueryError) -> PostgresLiveQuery<ID> {
        PostgresLiveQuery(runner: try await database.engine.open(request, firstScreen: firstScreenRows), database: database)
    }

    /// Validates `request` and says how it would be followed, without opening it: the path, advice
    /// (an index a join lookup lacks) and the statement that fetches the result. Throws what
    /// ``open(_:in:)`` would throw for it.
    public static func explain(_ request: PostgresLiveQueryRequest<ID>, in database: PostgresLiveDatabase)
        async throws(PostgresLiveQueryError) -> LiveQueryExplanation {
        let plan = try await database.engine.explain(request)
        return LiveQueryExplanation(path: plan.refetchReason.map { .refetch(reason: $0) } ?? .incremental, notes: plan.notes, sql: plan.fetchSQL)
    }

    /// Incremental, or refetch and why.
    public var mode: LiveUpdatePath {
        runner.plan.refetchReason.map { .refetch(reason: $0) } ?? .incremental
    }

    /// Whether the order of the result's rows is the same wherever it is read — on every server
    /// over the database: always for a query followed row by row; for a refetched one, when its
    /// ORDER BY ends with its identity column (else rows that tie come in no set order).
    public var isTotallyOrdered: Bool { runner.plan.isTotallyOrdered }

    /// Advice about the open query (see ``explain(_:in:)``).
    public var notes: [String] { runner.plan.notes }

    /// The names of the SELECT's columns, in the order of ``values(of:)``'s values.
    public var columnNames: [String] { runner.plan.columnNames }

    /// How the query orders its result, stated on its own columns: `nil` for a refetched query,
    /// when a sort term is not one of the SELECT's columns, or is of a type sent as text
    /// (numerics, dates, times, uuids) or floating point.
    public var order: ResultOrder? { runner.plan.layout.resultOrder }

    /// The rows' table, identity and filter, stated exactly (see ``LiveQueryCore/ResultSource``):
    /// `nil` when the engine does not state them.
    public var source: ResultSource? { runner.plan.layout.resultSource }

    /// The values of the SELECT's columns for `rows` of a result this query delivered, exactly as
    /// they are in that result: a row whose content changed since is left out — the update that
    /// changed it reloads it — and so is a row that left the tables. Numbers, booleans (0 and 1),
    /// text and bytes come as PostgreSQL sends them, numerics and uuids as their exact text, every
    /// other type as PostgreSQL's text form of it (dates and times in UTC, ISO).
    ///
    /// Rows the query's own reads carried lately (a refetch, a round's re-reads of changed rows,
    /// when every column is of a type sent as is) come from those reads; the rest are read on a
    /// connection of its own, beside the rounds.
    /// - Complexity: O(rows), plus one statement per 5,000 rows not kept from the query's reads.
    public func values(of rows: [LiveRow<ID>]) async throws(PostgresLiveQueryError) -> [ID: [SQLValue]] {
        // Rows the query's own reads carried lately are not read again.
        var (found, missing) = runner.keptContents(of: rows)
        guard !missing.isEmpty else { return found }
        let session = try await database.engine.contents.open()
        for (id, values) in try await runner.payloads(of: missing, session) { found[id] = values }
        return found
    }

    /// The values of those of `rows` that the query's own reads carried lately, at the rows'
    /// versions: what a list source hands its row cache with a changeset, reading nothing.
    /// - Complexity: O(rows).
    package func keptValues(of rows: [LiveRow<ID>]) -> [ID: [SQLValue]] {
        runner.keptContents(of: rows).found
    }

    /// Every change and failure from now on, starting with `.initial(latestResult)`.
    public var events: AsyncStream<LiveQueryEvent<ID>> { runner.tracker.channel.events() }

    /// Every change and failure from now on with the commit position it is at, starting with
    /// `.initial(latestResult, its position)`, and `.unchanged(through:)` whenever a commit
    /// touched the query's tables and left its result as it was: what a server sends to name each
    /// result alike on every instance over the database, and to tell its clients they are caught up.
    public func positionedEvents() -> AsyncStream<PostgresPositionedEvent<ID>> { runner.positioned.events() }

    /// The newest result now and after every change.
    public func results() -> AsyncStream<LiveResult<ID>> { runner.tracker.channel.results() }

    /// The newest result delivered.
    public var latestResult: LiveResult<ID> { runner.tracker.channel.latestResult }

    /// The end of the last commit that touched the query's tables and that the latest result
    /// includes (a commit's position in the WAL: the result is the query's result after exactly
    /// the commits ending at or before it, and at every position up to the next such commit).
    public var version: PostgresLSN { runner.version }

    /// The position `result` — one this query delivered — is the query's result at: the end of
    /// the last commit that touched the query's tables before it, the same on every server over
    /// the database; `nil` for a first screen, or a result delivered too long ago (the last 4,096
    /// are remembered).
    public func position(of result: LiveResult<ID>) -> PostgresLSN? {
        result.stateID.flatMap(runner.position(of:))
    }

    /// Whether `result`, one this query delivered, is also the query's result at `position`: it
    /// is at its own position, and at every later one until a commit touches the query's tables
    /// and changes it, as far as this query has followed the database.
    /// A server uses it to resume a client that saw the list at `position` elsewhere (another
    /// server over the same database, see ``PostgresLiveDatabase/positionsName``).
    public func holds(_ result: LiveResult<ID>, at position: PostgresLSN) -> Bool {
        guard let state = result.stateID else { return false }
        return holds(state, at: position)
    }

    /// Whether the result of state `state` (``LiveResult/stateID``), one this query delivered, is
    /// also the query's result at `position`, as for a result above: for a
    /// holder that keeps the state's identity without the result.
    public func holds(_ state: ListStateID, at position: PostgresLSN) -> Bool {
        runner.holds(state, at: position)
    }

    /// Rows read and refetches so far.
    public var statistics: LiveQueryStatistics { runner.tracker.statistics.current }

    /// The result once every transaction committed before this call is reflected: write, then
    /// `await` this to see the write in the list.
    public func upToDate() async throws(PostgresLiveQueryError) -> LiveResult<ID> {
        try await database.engine.catchUp()
        if !runner.isWhole {
            await runner.waitForWholeResult()
            try await database.engine.catchUp()
        }
        return latestResult
    }

    /// Stops following; the events end.
    public func cancel() async {
        await database.engine.close(runner)
    }
}

extension PostgresLiveQuery: LiveQueryProtocol {
    public typealias Failure = PostgresLiveQueryError
}
