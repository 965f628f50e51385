import Foundation
import GRDB
import ListDiff
import LiveQueryCore

/// A query over SQLite whose result follows the database: every commit that changes the result
/// yields one changeset, in commit order, computed from the rows the transaction touched — not by
/// refetching and diffing the whole result.
///
/// ```swift
/// import GRDB
/// import ListDiff
/// import LiveQuery
///
/// func follow(_ dbQueue: DatabaseQueue) async throws {
///     let request = LiveQueryRequest(table: "conversation", sort: [SortTerm("name")])
///     let query = try await LiveQuery.open(request, in: dbQueue)
///     for await event in query.events {
///         switch event {
///         case .initial(let result): print("\(result.count) rows")
///         case .update(let update): print("\(update.changeset.changes.count) changes, \(update.path)")
///         case .failure(let error): print("failed: \(error)")
///         }
///     }
/// }
/// ```
///
/// Column sorts (BINARY, NOCASE, RTRIM, ASC/DESC, NULLS FIRST/LAST) over a rowid table and the
/// tables it joins many-to-one are maintained incrementally, whatever the WHERE clause — unless it
/// reads its own tables in a subquery or calls a function that can change without a write. Other
/// shapes (GROUP BY, DISTINCT, LIMIT, one-to-many joins, ORDER BY expressions, custom collations,
/// WITHOUT ROWID base tables…) refetch and diff on every commit that concerns them; so do
/// transactions touching more than ``Options/refetchThreshold`` rows, changes to other tables a
/// subquery reads, and commits by other connections or processes when the database has no
/// change log (``ChangeTracking``; with it, they are incremental too). ``mode`` and
/// ``explain(_:in:)`` say which applies and why; every update's ``LiveQueryUpdate/path`` says how
/// it was computed.
///
/// Rows changed by an UPDATE that changes their rowid, rows a REPLACE deletes to make room for
/// another, and the result rows that meet a changed row of a joined table are reported by TEMP
/// triggers on the query's own connection (SQLite's update hook says nothing about the first two);
/// the database file and its schema are never changed by a query.
///
/// Database work runs on GRDB's writer queue, never on the main actor.
public final class LiveQuery<ID: LiveIdentity>: Sendable {
    /// Tuning (``LiveQueryOptions``).
    public typealias Options = LiveQueryOptions

    /// The result when the query opened.
    public let initialResult: LiveResult<ID>
    /// Whether the query is maintained incrementally, or refetches (and why) — for the current
    /// request.
    public var mode: LiveUpdatePath { core.summary.path }

    let core: SQLiteQueryRunner<ID>
    private let writer: any DatabaseWriter
    private let poller: Task<Void, Never>?
    private let watch: ExternalChangeWatch<ID>?

    private init(core: SQLiteQueryRunner<ID>, initialResult: LiveResult<ID>, writer: any DatabaseWriter, options: Options) {
        self.core = core
        self.writer = writer
        self.initialResult = initialResult
        watch = options.watchesFiles ? ExternalChangeWatch(core: core, writer: writer) { [weak core] error in
            if let core { Self.stop(core, writer: writer, with: error) }
        } : nil
        guard let interval = options.dataVersionPollInterval else {
            poller = nil
            return
        }
        let path = writer.path
        let identity = DatabaseFileIdentity.isFile(path) ? DatabaseFileIdentity.of(path) : nil
        poller = Task { [weak core, writer] in
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    return   // cancelled
                }
                guard let core, !core.channel.isFinished else { return }
                if let identity {
                    let now = DatabaseFileIdentity.of(path)
                    if now != identity {
                        let error: LiveQueryError = now == nil ? .databaseGone("\(path) was removed") : .databaseReplaced(path: path)
                        Self.stop(core, writer: writer, with: error)
                        return
                    }
                }
                do {
                    _ = try await Self.retrying(options.busyRetries) {
                        try await writer.writeWithoutTransaction { db in try core.checkExternalChanges(db) }
                    }
                } catch {
                    core.channel.deliver(.failure(LiveQueryError.from(error, sql: nil)))
                }
            }
        }
    }

    deinit {
        poller?.cancel()
        watch?.stop()
        Self.stop(core, writer: writer, with: nil)
    }

    /// Validates `request` against the schema, builds its index off the main actor, and starts
    /// following the database. Bad input throws before anything is observed.
    ///
    /// Events go to ``events`` and ``results()`` and, when given, to `onEvent` — `.initial`
    /// first, then every update and failure: on `callbackQueue`, or — when that is `nil` —
    /// synchronously on the writer's queue right after the commit (keep it short). Nothing is
    /// delivered after ``cancel()``.
    ///
    /// - Complexity: O(n) before it returns for a result of n ≤ ``LiveQueryOptions/wholeResultRows``
    ///   rows; for a larger one O(``LiveQueryOptions/firstScreenRows``), and the rest, O(n), off the
    ///   caller's path. Rows arrive in order, so the index is built without sorting.
    public static func open(
        _ request: LiveQueryRequest<ID>, in writer: any DatabaseWriter, options: Options = Options(),
        callbackQueue: DispatchQueue? = .main, onEvent: (@Sendable (LiveQueryEvent<ID>) -> Void)? = nil
    ) async throws(LiveQueryError) -> LiveQuery<ID> {
        let (core, initial): (SQLiteQueryRunner<ID>, LiveResult<ID>)
        do {
            (core, initial) = try await retrying(options.busyRetries) {
                try await writer.writeWithoutTransaction { db in
                    let plan = try QueryPlan(request, db)
                    let core = try SQLiteQueryRunner<ID>(plan: plan, db: db, options: options) { initial in
                        EventChannel(initial: initial, callbackQueue: callbackQueue, onEvent: onEvent)
                    }
                    // Added inside the same writer access as the fetch: no commit can fall between.
                    db.add(transactionObserver: core, extent: .observerLifetime)
                    core.channel.deliverInitialToCallback()
                    if core.isBuilding, writer is DatabasePool {
                        // A reader takes a snapshot of this very state and indexes the rest while
                        // the writer goes on; commits from now on wait in the core.
                        writer.spawnConcurrentRead { result in
                            core.buildRest(plan, from: result) { builder in
                                writer.asyncWriteWithoutTransaction { db in core.finishBuild(builder, db) }
                            }
                        }
                    }
                    return (core, core.channel.latestResult)
                }
            }
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
        let query = LiveQuery(core: core, initialResult: initial, writer: writer, options: options)
        if core.isBuilding, !(writer is DatabasePool) {
            // One connection: the rest is fetched in the writer's next access.
            writer.asyncWriteWithoutTransaction { db in
                core.buildRest(core.plan, from: .success(db)) { builder in core.finishBuild(builder, db) }
            }
        }
        return query
    }

    /// Opens a query whose events are delivered to `onEvent` on the main actor, in order.
    @MainActor
    public static func open(
        _ request: LiveQueryRequest<ID>, in writer: any DatabaseWriter, options: Options = Options(),
        onMainActor onEvent: @escaping @MainActor (LiveQueryEvent<ID>) -> Void
    ) async throws(LiveQueryError) -> LiveQuery<ID> {
        try await open(request, in: writer, options: options, callbackQueue: .main) { event in
            MainActor.assumeIsolated { onEvent(event) }
        }
    }

    /// Every change and failure from now on, starting with `.initial(latestResult)`. Each access
    /// is a new, independent sequence, so any number of consumers may iterate. Buffering is
    /// unbounded — every changeset starts where the one before ended, so none may be dropped — and
    /// a sequence's buffer is released when its iteration ends.
    public var events: AsyncStream<LiveQueryEvent<ID>> { core.channel.events() }

    /// The newest result now and after every change; a slow consumer skips intermediate results
    /// (the buffer keeps the newest one).
    public func results() -> AsyncStream<LiveResult<ID>> { core.channel.results() }

    /// The newest result delivered.
    public var latestResult: LiveResult<ID> { core.channel.latestResult }

    /// The newest result once it holds every row (after the first screen, the rest of the first
    /// fetch arrives as an update).
    public func completeResult() async -> LiveResult<ID> {
        for await result in results() where result.isComplete { return result }
        return latestResult
    }

    /// The result once every commit made before this call is reflected — this process's own
    /// (applied at their commit), other connections' and processes' (looked for now, through the
    /// change log or a refetch) — and the first fetch is complete. Write, then `await` this to
    /// see the write in the list:
    ///
    /// ```swift
    /// import GRDB
    /// import LiveQuery
    ///
    /// func rename(_ id: Int64, to name: String, in dbQueue: DatabaseQueue, _ query: LiveQuery<Int64>) async throws -> Int? {
    ///     try await dbQueue.write { db in
    ///         try db.execute(sql: "UPDATE contact SET name = ? WHERE id = ?", arguments: [name, id])
    ///     }
    ///     let result = try await query.upToDate()
    ///     return result.position(of: id)   // where the renamed row sits now
    /// }
    /// ```
    public func upToDate() async throws(LiveQueryError) -> LiveResult<ID> {
        // Other connections' commits are looked for once the first fetch is complete: while its
        // rest is read, a look finds nothing, and the rest is read from a state that may be older
        // than this call.
        if !latestResult.isComplete { _ = await completeResult() }
        try await checkForExternalChanges()
        return latestResult
    }

    /// What the query has done so far.
    public var statistics: LiveQueryStatistics { core.statistics.current }

    /// Changes the filter, sort or sections. Delivers one changeset from the displayed result to
    /// the new one; an invalid request throws and changes nothing.
    ///
    /// - Complexity: O(n) for n rows before and after: the new result is fetched and diffed
    ///   against the displayed one.
    public func setRequest(_ request: LiveQueryRequest<ID>) async throws(LiveQueryError) {
        let core = core, writer = writer
        do {
            try await Self.retrying(core.options.busyRetries) {
                try await writer.writeWithoutTransaction { db in
                    let plan = try QueryPlan(request, db)
                    try core.change(to: plan, db)
                }
            }
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
    }

    /// Looks for commits by other connections now, instead of waiting for the next poll.
    public func checkForExternalChanges() async throws(LiveQueryError) {
        let core = core, writer = writer
        do {
            _ = try await Self.retrying(core.options.busyRetries) {
                try await writer.writeWithoutTransaction { db in try core.checkExternalChanges(db) }
            }
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
    }

    /// Stops following the database and finishes every sequence; nothing is delivered after it.
    public func cancel() {
        poller?.cancel()
        watch?.stop()
        Self.stop(core, writer: writer, with: nil)
    }

    private static func stop(_ core: SQLiteQueryRunner<ID>, writer: any DatabaseWriter, with error: LiveQueryError?) {
        core.channel.finish(with: error.map { .failure($0) })
        // A removed or replaced file: no SQL through the old connection, whose next lock could
        // take the new file's journal for its own.
        let fileIsGone = error?.isTerminal ?? false
        writer.asyncWriteWithoutTransaction { db in core.stop(db, touchingDatabase: !fileIsGone) }
    }

    /// Runs `body`, retrying when the database is busy or locked, with pauses of 40, 80, 160 ms….
    static func retrying<T: Sendable>(_ retries: Int, _ body: () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await body()
            } catch {
                guard LiveQueryError.from(error, sql: nil).isBusy, attempt < retries else { throw error }
                attempt += 1
                try await Task.sleep(for: .milliseconds(20 << attempt))
            }
        }
    }
}

/// Tuning of a ``LiveQuery``.
public struct LiveQueryOptions: Sendable {
    /// Transactions touching more rows than this refetch instead.
    public var refetchThreshold: Int
    /// How often to look for commits by other connections, and for a removed or replaced
    /// database file; `nil` to never look.
    public var dataVersionPollInterval: Duration?
    /// How many times a busy or locked database is retried (with doubling pauses from 40 ms)
    /// before a failure is delivered.
    public var busyRetries: Int
    /// How many rows a large query opens with: its first screen. A query whose result may hold
    /// more than ``wholeResultRows`` rows returns from `open` with its first `firstScreenRows`
    /// rows, and the rest is indexed off the caller's path (on a reader of a `DatabasePool`,
    /// concurrently with writes; on the writer of a `DatabaseQueue`, right after). The rest
    /// arrives as one update whose path is ``LiveUpdatePath/firstFetchCompleted``; commits that
    /// land meanwhile are applied with it. Until then the result says it is incomplete
    /// (``LiveResult/isComplete``), ``LiveResult/location(of:)`` answers
    /// ``RowLocation/notYetKnown`` for rows below it, and ``LiveQuery/completeResult()`` or
    /// ``LiveQuery/upToDate()`` wait for the whole result. `nil` indexes everything before
    /// returning.
    public var firstScreenRows: Int?
    /// Up to how many rows a result is indexed whole before `open` returns, so that `.initial`
    /// is complete. Told before reading a row, from the base table's rowid span (two O(log n)
    /// lookups): a table spanning at most this many rowids is indexed whole — 25,000 rows, the
    /// default, take about 8 ms here through SQLite's cheapest plan. Requests without a base
    /// rowid table (GROUP BY, DISTINCT…) and larger tables open with ``firstScreenRows``.
    public var wholeResultRows: Int
    /// Whether other connections' commits are read from the change log when the database has one
    /// covering the query's tables (``ChangeTracking``); `false` refetches them.
    public var followsChangeLog: Bool
    /// How long the query's recorded change-log position holds the log's entries without being
    /// renewed (it is renewed every quarter of it while the query is open): a process that
    /// vanished stops pinning the log after this.
    public var changeLogReaderExpiry: Duration
    /// Whether to watch the database's files for other connections' commits (inotify, or
    /// DispatchSource on Apple platforms), so they are seen within milliseconds rather than at
    /// the next poll.
    public var watchesFiles: Bool

    /// Creates options; the defaults suit an app's main list.
    public init(refetchThreshold: Int = 1_000, dataVersionPollInterval: Duration? = .milliseconds(500), busyRetries: Int = 3,
                firstScreenRows: Int? = 200, followsChangeLog: Bool = true, changeLogReaderExpiry: Duration = .seconds(60),
                watchesFiles: Bool = true, wholeResultRows: Int = 25_000) {
        self.wholeResultRows = wholeResultRows
        self.refetchThreshold = refetchThreshold
        self.dataVersionPollInterval = dataVersionPollInterval
        self.busyRetries = busyRetries
        self.firstScreenRows = firstScreenRows
        self.followsChangeLog = followsChangeLog
        self.changeLogReaderExpiry = changeLogReaderExpiry
        self.watchesFiles = watchesFiles
    }
}

extension LiveQuery: LiveQueryProtocol {
    public typealias Failure = LiveQueryError
}
