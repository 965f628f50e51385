import ListDiff
import LiveListWire
import LiveQueryCore

/// A live query as a server publishes it, whatever its engine: its events, the values of its
/// rows, and what its versions are. ``LiveQueryEngine/open(_:arguments:)`` makes one per
/// distinct (query, arguments), shared by every subscriber.
public protocol ServedLiveQuery: Sendable {
    /// Every change and failure from now on, starting with `.initial(latest result)`.
    var events: AsyncStream<LiveQueryEvent<SQLValue>> { get }
    /// The names of the query's columns, in the order of ``values(of:)``'s values.
    var columnNames: [String] { get }
    /// How the query orders its result, stated on its columns, when the engine can (`nil`
    /// otherwise, the default): sent with every `reset`.
    var order: ResultOrder? { get }
    /// The rows' table, identity and filter, when the engine states them exactly (`nil`
    /// otherwise, the default): with the published mutations' effects, sent with every `reset`
    /// as `effects`.
    var source: ResultSource? { get }
    /// The values of `rows` of a delivered result, exactly as that result holds them: a row whose
    /// content changed since is left out (its update reloads it), and so is a row that is gone.
    func values(of rows: [LiveRow<SQLValue>]) async throws -> [SQLValue: [SQLValue]]
    /// Stops following; the events end.
    func cancel()
    /// The name of the positions results are at, shared by every server over the same database
    /// (PostgreSQL's commit positions); `nil` when the server numbers results itself (SQLite's
    /// queries: versions are then good on this server only).
    var positionsName: String? { get }
    /// The position a delivered result is at (with ``positionsName``).
    func position(of result: LiveResult<SQLValue>) -> UInt64?
    /// Whether the delivered result of state `state` is also the query's result at `position`
    /// (with ``positionsName``).
    func holds(_ state: ListStateID, at position: UInt64) -> Bool
    /// Looks for every commit made before the call (other processes' too) and returns the state
    /// of the delivered result that holds them — a state ``events`` delivers, now or soon after —
    /// or `nil` when the query cannot look (its newest delivered result is then taken as up to
    /// date). What a client's `sync` waits for.
    func upToDate() async throws -> ListStateID?
    /// Every change and failure from now on with the position each result is at, starting with
    /// `.initial`: what the server follows. Engines whose versions are not positions give
    /// ``events`` as they are (the default).
    var servedEvents: AsyncStream<ServedLiveQueryEvent> { get }
}

/// A served live query's event, with the position its result is at when the engine's versions
/// are positions (``ServedLiveQuery/positionsName``).
public enum ServedLiveQueryEvent: Sendable {
    /// The result when the stream began (`position`: `nil` when it is at none, a first screen).
    case initial(LiveResult<SQLValue>, position: UInt64?)
    /// A new result, at `position`.
    case update(LiveQueryUpdate<SQLValue>, position: UInt64?)
    /// The latest result is also the query's result at `position`: a commit touched the query's
    /// tables and left it as it was. Subscribers are told they are caught up to it.
    case unchanged(through: UInt64)
    case failure(LiveQueryError)

    /// A live query's event, at no position.
    public init(_ event: LiveQueryEvent<SQLValue>) {
        switch event {
        case let .initial(result): self = .initial(result, position: nil)
        case let .update(update): self = .update(update, position: nil)
        case let .failure(failure): self = .failure(failure)
        }
    }
}

extension ServedLiveQuery {
    /// Results numbered by the server.
    public var positionsName: String? { nil }
    /// No order stated: clients place no row themselves.
    public var order: ResultOrder? { nil }
    /// No source stated: clients derive no pending rows.
    public var source: ResultSource? { nil }

    /// Results numbered by the server.
    public func position(of result: LiveResult<SQLValue>) -> UInt64? { nil }
    /// Results numbered by the server.
    public func holds(_ state: ListStateID, at position: UInt64) -> Bool { false }
    /// No look: the newest delivered result is taken as up to date.
    public func upToDate() async throws -> ListStateID? { nil }

    /// Whether a delivered result is also the query's result at `position` (with ``positionsName``).
    public func holds(_ result: LiveResult<SQLValue>, at position: UInt64) -> Bool {
        result.stateID.map { holds($0, at: position) } ?? false
    }

    /// ``events``, at no position.
    public var servedEvents: AsyncStream<ServedLiveQueryEvent> {
        let (stream, continuation) = AsyncStream<ServedLiveQueryEvent>.makeStream()
        let events = events
        let forward = Task {
            for await event in events { continuation.yield(ServedLiveQueryEvent(event)) }
            continuation.finish()
        }
        continuation.onTermination = { _ in forward.cancel() }
        return stream
    }
}

/// What opens the live queries a server publishes: SQLite's (`SQLiteEngine` of LiveListServerSQLite), PostgreSQL's
/// (`PostgresEngine`, in `LiveListServerPostgres`), or an app's own.
public protocol LiveQueryEngine: Sendable {
    /// Opens `query` with validated `arguments` (one per parameter, by name). A request the
    /// engine refuses (bad SQL, an unknown column) throws: the subscriber gets the error.
    func open(_ query: PublishedQuery, arguments: [String: WireValue]) async throws -> any ServedLiveQuery
    /// Runs a mutation once: in one transaction, reads the client's ledger (``MutationLedger``),
    /// takes the ``MutationStep``, and — for ``MutationStep/apply`` — runs the mutation and
    /// records its number (and a refusal, rolling the mutation's own changes back) in the same
    /// transaction. Throws a `WireError` (`mutationOutOfOrder`, `mutationUnavailable`) when
    /// nothing was recorded and the client is to act; any other error is sent as
    /// `mutationUnavailable` (the client sends the mutation again).
    func perform(_ request: MutationRequest) async throws -> MutationOutcome
    /// How the engine's change capture keeps up with the database, from what it measured last:
    /// what the server's readiness and metrics report. Returns at once (no round trip).
    func changeCapture() async -> ChangeCaptureStatus
    /// What `mutation`'s statements do, stated exactly (``LiveQueryCore/MutationEffects``), for
    /// clients to show its effect before its answer; read once per mutation, when the server
    /// first needs it.
    func effects(of mutation: PublishedMutation) async -> MutationEffects
}

extension LiveQueryEngine {
    /// Following, nothing measured: an engine that captures changes in process.
    public func changeCapture() async -> ChangeCaptureStatus { .following }

    /// No effects stated: clients show only the pending rows their apps describe.
    public func effects(of mutation: PublishedMutation) async -> MutationEffects { .unstated(.engineStatesNone) }

    /// No mutations: every one is refused with `unknownMutation`.
    public func perform(_ request: MutationRequest) async throws -> MutationOutcome {
        throw WireError(sub: nil, code: .unknownMutation, message: "this server's engine runs no mutations")
    }
}
