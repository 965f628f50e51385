import Foundation
import GRDB
import ListDiff

/// The machinery of one live query: a GRDB transaction observer that collects the rowids each
/// transaction touches and, at commit, turns them into a changeset.
///
/// `@unchecked Sendable` because every access happens on the database writer's serial queue: GRDB
/// calls the observer methods there, and `LiveQuery` reaches the core only through
/// `writeWithoutTransaction`.
final class LiveQueryCore: TransactionObserver, @unchecked Sendable {
    private(set) var plan: QueryPlan
    private(set) var state: ResultState
    let options: LiveQuery.Options
    let deliver: @Sendable (LiveQueryEvent) -> Void

    private var touched: Set<Int64> = []
    private var needsRefetch: String?
    private var lastDataVersion: Int?
    /// The last local revision handed out (queries without a version column).
    private var revision: Int64 = 0

    init(plan: QueryPlan, db: Database, options: LiveQuery.Options, deliver: @escaping @Sendable (LiveQueryEvent) -> Void) throws(LiveQueryError) {
        self.plan = plan
        self.options = options
        self.deliver = deliver
        state = try Self.fetchState(plan, db, previous: nil)
        lastDataVersion = try? Int.fetchOne(db, sql: "PRAGMA data_version")
    }

    /// The whole result, fetched in SQLite's own order.
    static func fetchState(_ plan: QueryPlan, _ db: Database, previous: ResultState?) throws(LiveQueryError) -> ResultState {
        let sql = plan.fetchAllSQL
        do {
            var entries: [IndexEntry] = []
            if let previous { entries.reserveCapacity(previous.index.count) }
            let rows = try Row.fetchCursor(db, sql: sql, arguments: plan.arguments)
            while let row = try rows.next() {
                var entry = plan.entry(from: row)
                // Without a version column, a row keeps its local revision across refetches.
                if !plan.hasVersionColumn, let known = previous?.entry(for: entry.rowid) { entry.version = known.version }
                entries.append(entry)
            }
            return ResultState(comparator: plan.comparator, sorted: entries, isSectioned: plan.request.section != nil)
        } catch {
            throw LiveQueryError.from(error, sql: sql)
        }
    }

    // MARK: - TransactionObserver

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        let tableName: String
        switch eventKind {
        case let .insert(name), let .delete(name), let .update(name, _): tableName = name
        }
        if tableName.caseInsensitiveCompare(plan.table) == .orderedSame {
            if case let .refetch(reason) = plan.mode {
                needsRefetch = reason
                return false
            }
            if case .update = eventKind, plan.hasVersionColumn {
                // An UPDATE of columns the query does not read changes nothing it shows.
                return plan.region.isModified(byEventsOfKind: eventKind)
            }
            return true
        }
        if plan.otherTables.contains(tableName.lowercased()) && plan.region.isModified(byEventsOfKind: eventKind) {
            needsRefetch = "the filter reads \(tableName), which changed"
        }
        return false
    }

    func databaseDidChange(with event: DatabaseEvent) {
        guard needsRefetch == nil else { return }
        touched.insert(event.rowID)
        if touched.count > options.refetchThreshold {
            needsRefetch = "more than \(options.refetchThreshold) rows changed in one transaction"
            stopObservingDatabaseChangesUntilNextTransaction()
        }
    }

    func databaseDidCommit(_ db: Database) {
        let clock = ContinuousClock()
        let start = clock.now
        // No PRAGMA data_version here: our own commits do not move it, and reading it now would
        // swallow a commit another connection made meanwhile, which the poller must still see.
        defer {
            touched = []
            needsRefetch = nil
        }
        do {
            if let reason = needsRefetch {
                try refetch(db, reason: reason, start: start)
            } else if !touched.isEmpty {
                try applyTouchedRows(db, start: start)
            }
        } catch {
            deliver(.failure(LiveQueryError.from(error, sql: nil)))
        }
    }

    func databaseDidRollback(_ db: Database) {
        touched = []
        needsRefetch = nil
    }

    // MARK: - Producing changesets

    /// Re-reads the touched rows with the query's own WHERE clause, so filter semantics are
    /// SQLite's, and moves them inside the index.
    private func applyTouchedRows(_ db: Database, start: ContinuousClock.Instant) throws {
        var fetched: [Int64: IndexEntry] = [:]
        let ids = Array(touched)
        var offset = 0
        while offset < ids.count {
            let batch = ids[offset..<min(offset + 500, ids.count)]
            offset += batch.count
            let placeholders = Array(repeating: "?", count: batch.count).joined(separator: ",")
            let sql = plan.rereadPrefixSQL + placeholders + ")"
            var arguments = plan.arguments
            arguments += StatementArguments(batch.map { $0 as any DatabaseValueConvertible })
            do {
                let rows = try Row.fetchCursor(db, sql: sql, arguments: arguments)
                while let row = try rows.next() {
                    let entry = plan.entry(from: row)
                    fetched[entry.rowid] = entry
                }
            } catch {
                throw LiveQueryError.from(error, sql: sql)
            }
        }
        var changes: [ResultState.RowChange] = []
        changes.reserveCapacity(ids.count)
        for rowid in ids {
            let old = state.entry(for: rowid)
            var new = fetched[rowid]
            if !plan.hasVersionColumn, var entry = new {
                // Without a version column every touched row gets a revision never used before,
                // so any update reloads it and a cache keyed by (rowid, version) never serves
                // stale content.
                revision += 1
                entry.version = .integer(revision)
                new = entry
            }
            changes.append(ResultState.RowChange(rowid: rowid, old: old, new: new))
        }
        let changeset = state.apply(changes)
        guard !changeset.isEmpty else { return }
        deliver(.update(LiveQueryUpdate(changeset: changeset, result: state.result, path: .incremental, latency: start.duration(to: .now))))
    }

    /// Fetches the whole result again and diffs it against what was delivered last.
    func refetch(_ db: Database, reason: String, start: ContinuousClock.Instant) throws {
        try replaceState(db, reason: reason, start: start, deliversEmptyChange: false)
    }

    private func replaceState(_ db: Database, reason: String, start: ContinuousClock.Instant, deliversEmptyChange: Bool) throws {
        let newState = try Self.fetchState(plan, db, previous: state)
        let changeset = LiveChangeset(from: state.result.snapshot(), to: newState.result.snapshot())
        state = newState
        guard deliversEmptyChange || !changeset.isEmpty else { return }
        deliver(.update(LiveQueryUpdate(changeset: changeset, result: state.result, path: .refetch(reason: reason), latency: start.duration(to: .now))))
    }

    /// Another connection or process committed when `PRAGMA data_version` moved: refetch.
    func pollDataVersion(_ db: Database) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA data_version")
        guard let version, version != lastDataVersion else { return }
        lastDataVersion = version
        try refetch(db, reason: "another connection committed", start: ContinuousClock.now)
    }

    /// Switches to `plan` (a new filter, sort or sections) with one changeset from the displayed
    /// result to the new one — delivered even when empty, so the caller always gets its answer.
    func change(to plan: QueryPlan, _ db: Database) throws {
        let previous = self.plan
        self.plan = plan
        do {
            try replaceState(db, reason: "criteria changed", start: ContinuousClock.now, deliversEmptyChange: true)
        } catch {
            self.plan = previous   // a failed fetch changes nothing
            throw error
        }
    }
}
