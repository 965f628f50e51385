import Foundation
import GRDB
import ListDiff

/// A query over SQLite whose result follows the database: every commit that changes the result
/// yields one changeset, in commit order, computed from the rows the transaction touched — not by
/// refetching and diffing the whole result.
///
/// ```swift
/// let query = try await LiveQuery.open(request, in: dbPool)
/// show(query.initialResult)
/// for await event in query.events {
///     switch event {
///     case .update(let update): presenter.apply(update.changeset)
///     case .failure(let error): showBanner(error)
///     }
/// }
/// ```
///
/// Plain column sorts (BINARY, NOCASE, RTRIM, ASC/DESC, NULLS FIRST/LAST) on rowid tables are
/// maintained incrementally. Custom collations and WITHOUT ROWID tables, transactions touching
/// more than ``Options/refetchThreshold`` rows, changes to other tables the filter reads, and
/// commits by other connections or processes (seen through `PRAGMA data_version`) refetch and
/// diff instead; ``LiveQueryUpdate/path`` says which happened. Database work runs on GRDB's
/// writer queue, never on the main actor.
public final class LiveQuery: Sendable {
    /// Tuning.
    public struct Options: Sendable {
        /// Transactions touching more rows than this refetch instead.
        public var refetchThreshold: Int
        /// How often to look for commits by other connections; `nil` to never look.
        public var dataVersionPollInterval: Duration?
        /// How many times a busy or locked database is retried before a failure is delivered.
        public var busyRetries: Int

        /// Creates options; the defaults suit an app's main list.
        public init(refetchThreshold: Int = 1_000, dataVersionPollInterval: Duration? = .milliseconds(500), busyRetries: Int = 3) {
            self.refetchThreshold = refetchThreshold
            self.dataVersionPollInterval = dataVersionPollInterval
            self.busyRetries = busyRetries
        }
    }

    /// Every change and failure, in commit order, from the first access on. One consumer;
    /// nothing is dropped while it iterates. Until it is first read nothing is buffered, so an app
    /// that only uses the callback does not accumulate results.
    public var events: AsyncStream<LiveQueryEvent> { channel.stream() }
    /// The result when the query opened.
    public let initialResult: LiveResult
    /// Whether the query is maintained incrementally, or refetches (and why).
    public let mode: LiveQueryUpdate.Path

    private let core: LiveQueryCore
    private let writer: any DatabaseWriter
    private let channel: EventChannel
    private let poller: Task<Void, Never>?

    private init(core: LiveQueryCore, writer: any DatabaseWriter, channel: EventChannel, options: Options) {
        self.core = core
        self.writer = writer
        self.channel = channel
        initialResult = core.state.result
        mode = switch core.plan.mode {
        case .incremental: .incremental
        case let .refetch(reason): .refetch(reason: reason)
        }
        if let interval = options.dataVersionPollInterval {
            poller = Task { [weak core, writer, channel] in
                let path = writer.path
                var reportedGone = false
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    guard let core, !Task.isCancelled else { return }
                    if path != ":memory:" && !path.isEmpty && !FileManager.default.fileExists(atPath: path) {
                        if !reportedGone { channel.deliver(.failure(.databaseGone("\(path) was removed"))) }
                        reportedGone = true
                        continue
                    }
                    do {
                        try await Self.retrying(options.busyRetries) {
                            try await writer.writeWithoutTransaction { db in try core.pollDataVersion(db) }
                        }
                    } catch {
                        channel.deliver(.failure(LiveQueryError.from(error, sql: nil)))
                    }
                }
            }
        } else {
            poller = nil
        }
    }

    deinit {
        poller?.cancel()
        channel.finish()
    }

    /// Validates `request` against the schema, builds its index off the main actor, and starts
    /// following the database. Bad input throws before anything is observed.
    ///
    /// Events go to ``events`` and, when given, to `onEvent`: on `callbackQueue`, or — when that is
    /// `nil` — synchronously on the writer's queue right after the commit (keep it short).
    public static func open(
        _ request: LiveQueryRequest, in writer: any DatabaseWriter, options: Options = Options(),
        callbackQueue: DispatchQueue? = .main, onEvent: (@Sendable (LiveQueryEvent) -> Void)? = nil
    ) async throws(LiveQueryError) -> LiveQuery {
        let channel = EventChannel(callbackQueue: callbackQueue, onEvent: onEvent)
        let deliver: @Sendable (LiveQueryEvent) -> Void = { channel.deliver($0) }
        let core: LiveQueryCore
        do {
            core = try await retrying(options.busyRetries) {
                try await writer.writeWithoutTransaction { db in
                    let plan = try QueryPlan(request, db)
                    let core = try LiveQueryCore(plan: plan, db: db, options: options, deliver: deliver)
                    // Added inside the same writer access as the fetch: no commit can fall between.
                    db.add(transactionObserver: core, extent: .observerLifetime)
                    return core
                }
            }
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
        return LiveQuery(core: core, writer: writer, channel: channel, options: options)
    }

    /// Changes the filter, sort or sections. Delivers one changeset from the displayed result to
    /// the new one; an invalid request throws and changes nothing.
    public func setRequest(_ request: LiveQueryRequest) async throws(LiveQueryError) {
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
            try await Self.retrying(core.options.busyRetries) {
                try await writer.writeWithoutTransaction { db in try core.pollDataVersion(db) }
            }
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
    }

    /// The current result, read on the writer's queue.
    public func currentResult() async -> LiveResult {
        let core = core
        return (try? await writer.writeWithoutTransaction { _ in core.state.result }) ?? initialResult
    }

    /// Stops following the database and finishes ``events``.
    public func cancel() {
        poller?.cancel()
        channel.finish()
        let core = core
        writer.asyncWriteWithoutTransaction { db in db.remove(transactionObserver: core) }
    }

    /// Runs `body`, retrying when the database is busy or locked.
    static func retrying<T: Sendable>(_ retries: Int, _ body: () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await body()
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
                attempt += 1
                if attempt > retries { throw LiveQueryError.databaseBusy(message: error.message ?? "\(error)") }
                try? await Task.sleep(for: .milliseconds(20 << attempt))
            }
        }
    }
}
