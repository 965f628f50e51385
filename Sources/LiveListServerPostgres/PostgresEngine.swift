import ListDiff
import LiveListServer
import LiveListWire
import LiveQueryCore
import LiveQueryPostgres
import PostgresNIO

/// The engine of a server over PostgreSQL: its published queries are ``PostgresLiveQuery``s of
/// one ``PostgresLiveDatabase``, and their versions are commit positions — the same on every
/// server over the database, so several `livelist serve` instances share the load and a client
/// resumes on any of them.
///
/// ```swift
/// import Hummingbird
/// import LiveListServer
/// import LiveListServerPostgres
/// import LiveQueryPostgres
/// import PostgresNIO
///
/// func serve(_ configuration: PostgresConnection.Configuration) async throws {
///     let database = try await PostgresLiveDatabase.connect(configuration, slot: .persistent("livelist_server_1"))
///     let server = LiveListServer(engine: PostgresEngine(database: database), queries: [
///         PublishedQuery(name: "inbox", sql: "SELECT id, sender, subject FROM message WHERE owner = :owner ORDER BY sender",
///                        parameters: [QueryParameter("owner", type: .integer, claim: "sub")]),
///     ])
///     try await server.application(host: "127.0.0.1", port: 8080).runService()
/// }
/// ```
///
/// A published SELECT's `:name` placeholders become `$n` arguments: an integer is bound as
/// `bigint`, a real as `double precision`, text as `text`, a blob as `bytea` (cast in the SQL where
/// a column wants another type: `:id::uuid`).
public struct PostgresEngine: LiveQueryEngine {
    /// The database the queries follow.
    public let database: PostgresLiveDatabase
    /// Names this instance's results of refetched queries whose ORDER BY leaves ties: their
    /// order is the server's, which another instance may give differently, so their versions are
    /// good here only.
    private let instance: String
    private let writer: PostgresMutationWriter

    /// An engine over `database`; its mutations run on a connection of their own, made as the
    /// database's.
    public init(database: PostgresLiveDatabase) {
        self.database = database
        writer = PostgresMutationWriter(configuration: database.connectionConfiguration)
        var generator = SystemRandomNumberGenerator()
        instance = String(generator.next() as UInt32, radix: 36)
    }

    public func open(_ query: PublishedQuery, arguments: [String: WireValue]) async throws -> any ServedLiveQuery {
        let made: PublishedQuery.SQL?
        do {
            made = try query.sql(for: arguments)
        } catch {
            throw WireError(sub: nil, code: .badArguments, message: "\(error)")
        }
        guard let sql = made else {
            throw WireError(sub: nil, code: .queryFailed, message: "query \"\(query.name)\" is another engine's request: publish it as SQL to serve it from PostgreSQL")
        }
        let numbered: String, values: [SQLValue]
        do {
            (numbered, values) = try Self.numbered(sql.text, sql.arguments)
        } catch {
            throw WireError(sub: nil, code: .queryFailed, message: "query \"\(query.name)\" uses :\(error.name), which no parameter declares")
        }
        let request = PostgresLiveQueryRequest(sql: numbered, values: values, identity: sql.identity, as: SQLValue.self, section: sql.section,
                                               version: sql.version)
        let live = try await PostgresLiveQuery.open(request, in: database)
        return PostgresServedQuery(live: live, database: database, instance: instance)
    }

    /// Runs `request` once, in one transaction with its ledger (``MutationLedger``'s tables, created
    /// in the database when missing), on the engine's connection for mutations. Statements only:
    /// a SQLite mutation's code is refused with `mutationFailed`.
    public func perform(_ request: MutationRequest) async throws -> MutationOutcome {
        try await writer.perform(request)
    }

    /// What `mutation`'s statements do, read from the catalog (the tables' column types,
    /// defaults, collations and triggers): stated when each is a single-row INSERT … VALUES, an
    /// UPDATE … SET … WHERE or a DELETE … WHERE whose conditions compare columns of integer,
    /// boolean, text or `bytea` types with values or parameters as sent. A SQLite mutation's code
    /// states nothing.
    public func effects(of mutation: PublishedMutation) async -> MutationEffects {
        guard case let .statements(statements) = mutation.definition else { return .unstated(.notStatements) }
        let parameters = Dictionary(mutation.parameters.map { ($0.name, $0.valueClasses) }, uniquingKeysWith: { first, _ in first })
        return await database.mutationEffects(of: statements.map(\.sql), parameters: parameters)
    }

    /// The replication stream's state and its lag behind PostgreSQL's WAL, as
    /// ``PostgresLiveDatabase/replicationStatus`` measured them last.
    public func changeCapture() async -> ChangeCaptureStatus {
        let status = database.replicationStatus
        let state: ChangeCaptureStatus.State = switch status.stream {
        case .connecting: .starting
        case .streaming: .following
        case let .lost(since, error): .lost(since: since, reason: "\(error)")
        }
        return ChangeCaptureStatus(state: state, lagBytes: status.lagBytes, lag: status.lag, commitsDecoded: status.commitsDecoded,
                                   commitsApplied: status.commitsApplied, reconnects: status.streamReconnects,
                                   watchdogFirings: status.watchdogFirings)
    }

    /// Closes the engine's connection for mutations, once those under way have ended (the
    /// database's own connections close with ``PostgresLiveDatabase/close()``).
    public func close() async {
        await writer.close()
    }
}

extension PostgresEngine {
    /// A `:name` placeholder no argument gives.
    struct MissingArgument: Error {
        var name: String
    }

    /// `sql` with its `:name` placeholders numbered `$1`, `$2`…, and their values in that order.
    static func numbered(_ sql: String, _ arguments: [String: WireValue]) throws(MissingArgument) -> (sql: String, values: [SQLValue]) {
        let (numbered, names) = PostgresLiveQueryRequest<SQLValue>.numberingPlaceholders(in: sql) ?? (sql, [])
        let values = try names.map { name throws(MissingArgument) in
            guard let value = arguments[name] else { throw MissingArgument(name: name) }
            return value.sql
        }
        return (numbered, values)
    }
}

/// A PostgreSQL live query as the server publishes it: versions are its commit positions.
struct PostgresServedQuery: ServedEngineQuery {
    let live: PostgresLiveQuery<SQLValue>
    let database: PostgresLiveDatabase
    let instance: String

    var servedEvents: AsyncStream<ServedLiveQueryEvent> {
        let (stream, continuation) = AsyncStream<ServedLiveQueryEvent>.makeStream()
        let events = live.positionedEvents()
        let forward = Task {
            for await event in events {
                switch event {
                case let .initial(result, position): continuation.yield(.initial(result, position: position?.value))
                case let .update(update, position): continuation.yield(.update(update, position: position?.value))
                case let .unchanged(position): continuation.yield(.unchanged(through: position.value))
                case let .failure(failure): continuation.yield(.failure(failure))
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in forward.cancel() }
        return stream
    }
    var columnNames: [String] { live.columnNames }

    func values(of rows: [LiveRow<SQLValue>]) async throws -> [SQLValue: [SQLValue]] {
        try await live.values(of: rows)
    }

    /// A result is the query's answer at its positions on every instance when its order is total
    /// (followed row by row, or refetched with an ORDER BY that ends with the identity); else rows
    /// that tie come in the server's order, and its versions are good on this instance only.
    var positionsName: String? {
        live.isTotallyOrdered ? database.positionsName : database.positionsName + "-r" + instance
    }

    func position(of result: LiveResult<SQLValue>) -> UInt64? { live.position(of: result)?.value }

    func holds(_ state: ListStateID, at position: UInt64) -> Bool { live.holds(state, at: PostgresLSN(position)) }
}
