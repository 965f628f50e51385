import Logging
import PostgresNIO

/// A PostgreSQL database that live queries follow through logical decoding: one connection, one
/// replication slot (the built-in `pgoutput` plugin over a publication), polled in short rounds.
/// Commits by any session, process or server reach every open query, in commit order; rolled-back
/// work never shows.
///
/// ```swift
/// import ListDiff
/// import Logging
/// import LiveQuery
/// import LiveQueryPostgres
/// import PostgresNIO
///
/// func follow() async throws {
///     let configuration = PostgresConnection.Configuration(
///         host: "127.0.0.1", port: 5432, username: "app", password: nil, database: "app", tls: .disable)
///     let database = try await PostgresLiveDatabase.connect(configuration)
///     let query = try await PostgresLiveQuery.open(
///         PostgresLiveQueryRequest(table: "message", as: Int64.self, sort: [SortTerm("received", .descending)]),
///         in: database)
///     for await event in query.events {
///         if case let .update(update) = event { print(update.changeset.changes.count, "changes at", query.version) }
///     }
///     await database.close()
/// }
/// ```
///
/// The server needs `wal_level = logical`, a free slot (`max_replication_slots`) and a role with
/// the REPLICATION attribute; the publication (``publication``) is created `FOR ALL TABLES` when
/// missing and the role may. A `.persistent` slot survives a restart of this process and holds
/// WAL until it is dropped: bound it with `max_slot_wal_keep_size` (docs/POSTGRESQL.md).
public final class PostgresLiveDatabase: Sendable {
    /// The replication slot the database is followed through.
    public enum Slot: Sendable, Hashable {
        /// A slot that lives as long as the connection (dropped by PostgreSQL when it closes).
        case temporary
        /// A named slot that survives restarts: one per server instance.
        case persistent(String)
    }

    /// How the database learns that something was committed.
    public enum WakeUp: Sendable, Hashable {
        /// Looks at the slot every `interval`: a look that finds no WAL written since the last one
        /// costs one short statement. Commits reach the queries within about `interval`.
        case poll(Duration)
        /// A statement trigger on every table a query reads (added when the query opens, if the
        /// role may: it owns the table) NOTIFYs on commit, and the database looks at once; it
        /// also looks every `fallback`, for tables it could not add the trigger to. Commits reach
        /// the queries within about a millisecond, for a NOTIFY per writing transaction.
        case notify(fallback: Duration)
    }

    let engine: _PostgresEngine
    private let poller: Task<Void, Never>

    /// The publication the slot decodes.
    public let publication: String

    private init(engine: _PostgresEngine, publication: String) {
        self.engine = engine
        self.publication = publication
        let pollInterval: Duration = switch engine.wake {
        case let .poll(interval): interval
        case let .notify(fallback): fallback
        }
        poller = Task { [engine] in
            var interval = pollInterval
            while !Task.isCancelled {
                await engine.signals.wait(timeout: interval)
                if Task.isCancelled { return }
                do throws(PostgresLiveQueryError) {
                    try await engine.poll()
                    interval = pollInterval
                } catch {
                    // Delivered to every query as a failure (once per outage); the next rounds
                    // reconnect, less and less often up to once a second, and refetch.
                    if case .connectionClosed = error, await engine.isClosed { return }
                    interval = min(max(interval * 2, .milliseconds(50)), .seconds(1))
                }
            }
        }
    }

    deinit {
        poller.cancel()
        // Not closed by the app: the connections still close (the task keeps the engine until then).
        let engine = engine
        Task { await engine.shutDown() }
    }

    /// Connects, checks that logical decoding is on, ensures the publication and creates (or
    /// takes up) the slot.
    /// - Parameters:
    ///   - wake: how commits are noticed: polling (the default, every 20 ms) or notifications
    ///     from statement triggers; ``PostgresLiveQuery/upToDate()`` looks at once either way.
    ///   - refetchThreshold: a round whose transactions (usually one) touch more rows of a query's
    ///     table refetches it.
    ///   - timeout: how long a statement may go unanswered before its connection is closed and
    ///     the queries see a failure (the next round reconnects).
    public static func connect(
        _ configuration: PostgresConnection.Configuration, slot: Slot = .temporary, publication: String = "livelist",
        wake: WakeUp = .poll(.milliseconds(20)), refetchThreshold: Int = 1_000, timeout: Duration = .seconds(60),
        logger: Logger = Logger(label: "livelist.postgres")
    ) async throws(PostgresLiveQueryError) -> PostgresLiveDatabase {
        let engine = _PostgresEngine(configuration: configuration, slot: slot, publication: publication, refetchThreshold: refetchThreshold,
                                     timeout: timeout, wake: wake, logger: logger)
        do {
            try await engine.poll(force: true)
        } catch {
            await engine.shutDown()
            throw error
        }
        return PostgresLiveDatabase(engine: engine, publication: publication)
    }

    /// The end of the last commit every open query has absorbed (or the slot's position).
    public var version: PostgresLSN { get async { await engine.version } }

    /// What names this database's positions: the cluster, its timeline and the database. Two
    /// servers over the same database give the same name, so a version (a position) from one is
    /// understood by the other; positions under another name are not comparable.
    public var positionsName: String { engine.identity.name }

    /// Stops following: every query's events end, and the connection (with a temporary slot) closes.
    public func close() async {
        poller.cancel()
        await engine.shutDown()
    }
}
