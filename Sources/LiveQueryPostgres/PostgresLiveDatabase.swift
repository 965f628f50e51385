import Logging
import PostgresNIO

/// A PostgreSQL database that live queries follow through its streaming replication protocol: one
/// replication connection and slot (the built-in `pgoutput` plugin over a publication), streamed
/// on a thread of its own. Each commit is decoded once, as the server writes it, and applied to
/// every open query it touches, in commit order, whoever made it — another session, process or
/// server; rolled-back work never shows. No trigger is added to the app's tables, and nothing polls.
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
/// The server needs `wal_level = logical`, a free slot (`max_replication_slots`) and a free WAL
/// sender (`max_wal_senders`), and a role with the REPLICATION attribute; the publication
/// (``publication``) is created `FOR ALL TABLES` when missing and the role may. A `.persistent`
/// slot survives a restart of this process and holds WAL until it is dropped: bound it with
/// `max_slot_wal_keep_size` (docs/POSTGRESQL.md). The replication connection goes through libpq,
/// to the same server, role, database and TLS mode as `configuration`.
public final class PostgresLiveDatabase: Sendable {
    /// The replication slot the database is followed through.
    public enum Slot: Sendable, Hashable {
        /// A slot that lives as long as the replication connection (PostgreSQL drops it when the
        /// connection ends): commits made while the connection is down are not seen, so after a
        /// reconnection every query reads its result again.
        case temporary
        /// A named slot that survives restarts, one per server instance: after a reconnection —
        /// the process's restart included — the stream goes on after the last commit applied.
        case persistent(String)
    }

    let engine: PostgresDatabaseRunner
    private let pump: Task<Void, Never>
    let watch: WALWatch
    private let watching: Task<Void, Never>

    /// The publication the slot decodes.
    public let publication: String

    private init(engine: PostgresDatabaseRunner, watch: WALWatch, publication: String) {
        self.engine = engine
        self.watch = watch
        self.publication = publication
        watching = Task { await watch.run() }
        pump = Task { [engine] in
            var next: Duration?
            while !Task.isCancelled {
                await engine.inbox.wait(timeout: next ?? .seconds(1))
                if Task.isCancelled { return }
                next = await engine.pump()
                if await engine.isClosed { return }
            }
        }
    }

    deinit {
        pump.cancel()
        watching.cancel()
        // Not closed by the app: the connections still close (the task keeps the engine until then).
        let (engine, watch) = (engine, watch)
        Task {
            await watch.close()
            await engine.shutDown()
        }
    }

    /// Connects, checks that logical decoding is on, ensures the publication, creates (or takes
    /// up) the slot and starts streaming it.
    /// - Parameters:
    ///   - slot: a temporary slot (the default), or a persistent one that survives restarts.
    ///   - refetchThreshold: a round whose transactions (usually one) touch more rows of a query's
    ///     table refetches it.
    ///   - timeout: how long a statement may go unanswered before its connection is closed and
    ///     the queries see a failure (the next round reconnects). A round sends its reads
    ///     together: they are answered within it together.
    ///   - stallBound: the watchdog's bound. Once a second a connection of its own reads where
    ///     PostgreSQL's WAL ends; WAL the stream received but the engine did not apply for this
    ///     long, or did not receive while nothing came for this long, makes it reconnect the
    ///     stream (logged as a warning, counted in ``PostgresReplicationStatus/watchdogFirings``).
    public static func connect(
        _ configuration: PostgresConnection.Configuration, slot: Slot = .temporary, publication: String = "livelist",
        refetchThreshold: Int = 1_000, timeout: Duration = .seconds(60), stallBound: Duration = .seconds(10),
        logger: Logger = Logger(label: "livelist.postgres")
    ) async throws(PostgresLiveQueryError) -> PostgresLiveDatabase {
        let engine = PostgresDatabaseRunner(configuration: configuration, slot: slot, publication: publication, refetchThreshold: refetchThreshold,
                                     timeout: timeout, logger: logger)
        do {
            try await engine.start()
        } catch {
            await engine.shutDown()
            throw error
        }
        let watch = WALWatch(configuration: configuration, bound: stallBound, pageSize: await engine.walBlockSize,
                              segmentSize: await engine.walSegmentSize, inbox: engine.inbox, stream: engine.stream,
                              progress: engine.progress, logger: logger)
        return PostgresLiveDatabase(engine: engine, watch: watch, publication: publication)
    }

    /// How the database keeps up with PostgreSQL: the stream's state, the lag behind the WAL, and
    /// what was counted — at once, from what the watch measured last (within a second).
    public var replicationStatus: PostgresReplicationStatus { watch.status(counts: engine.inbox.counted) }

    /// Every commit that ends at or before this position is applied to every open query (the
    /// slot's position before any).
    public var version: PostgresLSN { PostgresLSN(engine.progress.applied) }

    /// What names this database's positions: the cluster, its timeline and the database. Two
    /// servers over the same database give the same name, so a version (a position) from one is
    /// understood by the other; positions under another name are not comparable.
    public var positionsName: String { engine.identity.name }

    /// How it connects: what a server's mutations connect with.
    package var connectionConfiguration: PostgresConnection.Configuration { engine.configuration }

    /// Stops following: every query's events end, and the connection (with a temporary slot) closes.
    public func close() async {
        pump.cancel()
        watching.cancel()
        await watch.close()
        await engine.shutDown()
    }
}
