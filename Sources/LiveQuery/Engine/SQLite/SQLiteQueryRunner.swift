import Foundation
import GRDB
import GRDBSQLite
import ListDiff
import LiveQueryCore

/// SQLite's runner of one live query: a GRDB transaction observer that collects the rowids each
/// transaction touches (from SQLite's update hook and from the query's TEMP triggers) and feeds
/// them to its ``LiveTracker``, the engine-independent core, which turns them into a changeset at
/// commit with this runner's reads (``SQLiteReads``).
///
/// `@unchecked Sendable`: every mutable property (and the tracker's state) but the `Locked`
/// `summary` is only accessed on the database writer's serial queue — GRDB calls the observer methods and the trigger function
/// there, and `LiveQuery` reaches the core only through the writer's access methods.
final class SQLiteQueryRunner<ID: LiveIdentity>: TransactionObserver, @unchecked Sendable {
    private(set) var plan: QueryPlan
    let tracker: LiveTracker<ID>
    let options: LiveQuery<ID>.Options
    let source: UInt64
    var index: LiveIndex { tracker.index }
    var channel: EventChannel<ID> { tracker.channel }
    var statistics: StatisticsBox { tracker.statistics }

    /// How the current request is followed, readable from any thread.
    private let currentSummary: Locked<(path: LiveUpdatePath, notes: [String])>
    var summary: (path: LiveUpdatePath, notes: [String]) { currentSummary.withLock { $0 } }

    func publishSummary() {
        let notes = plan.notes + (changeLogStatus.map { [$0.note] } ?? [])
        currentSummary.withLock { $0 = (plan.updatePath, notes) }
    }

    var lastDataVersion: Int?
    var lastSchemaVersion: Int?
    /// The change log, when the database has one covering every table the query reads.
    var follower: ChangeLogFollower?
    /// Why other connections' commits are not all read from the change log.
    var changeLogStatus: ChangeLogStatus?
    private var triggers: ChangeTriggers?

    /// The rows re-read at the latest commits, kept for row caches once one asked.
    let committed: CommittedRows

    /// Whether the query opened with its first screen and still indexes the rest.
    var isBuilding: Bool { tracker.isBuilding }

    static func canonicalizer() -> IdentityCanonicalizer {
        { ID(identityValue: $0)?.identityValue }
    }

    /// Fetches the result of `plan` and starts tracking: must run in the writer access that adds
    /// the core as an observer, so that no commit falls between the fetch and the observation.
    init(plan: QueryPlan, db: Database, options: LiveQuery<ID>.Options, channelFactory: (LiveResult<ID>) -> EventChannel<ID>) throws(LiveQueryError) {
        self.plan = plan
        self.options = options
        currentSummary = Locked((plan.updatePath, plan.notes))
        let canonical = Self.canonicalizer()
        let statistics = StatisticsBox()
        // Where other connections' commits are looked for from: read before the fetch, so that one
        // landing between the two is looked at again instead of never.
        let logStart = options.followsChangeLog ? ChangeLogFollower.start(db) : nil
        let dataVersion: Int?, schemaVersion: Int?
        do {
            dataVersion = try Int.fetchOne(db, sql: "PRAGMA data_version")
            schemaVersion = try Int.fetchOne(db, sql: "PRAGMA schema_version")
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
        let index: LiveIndex
        var isBuilding = false
        if let screen = options.firstScreenRows, !Self.isSmall(plan, db, limit: options.wholeResultRows) {
            var entries = try SQLiteReads(plan: plan, db: db).fetchFirst(screen + 1)
            statistics.update { $0.rowsRead += entries.count }
            if entries.count > screen {
                entries.removeLast(entries.count - screen)
                isBuilding = true
            }
            index = LiveIndex(layout: plan.layout, canonicalIdentity: canonical, identityType: "\(ID.self)", sorted: entries,
                               isComplete: !isBuilding)
        } else {
            var builder = IndexBuilder(layout: plan.layout, canonicalIdentity: canonical)
            try SQLiteReads(plan: plan, db: db).fetchAll(into: &builder, mayBeLarge: true)
            let count = builder.count
            statistics.update { $0.rowsRead += count }
            index = LiveIndex(builder: builder, identityType: "\(ID.self)")
        }
        if let mismatch = Self.identityTypeMismatch(in: index) {
            // The declared type cannot hold the column's values: say so before anything is
            // installed, rather than open a list that silently leaves those rows out.
            throw LiveQueryError.invalidRequest(.identityTypeMismatch(
                identity: plan.identityName ?? "the default identity", found: mismatch.found, examples: mismatch.examples,
                declared: "\(ID.self)"))
        }
        source = index.source
        committed = CommittedRows(canonical: canonical)
        tracker = LiveTracker(index: index, layout: plan.layout,
                               state: TrackingState(isBuilding: isBuilding, refetchThreshold: options.refetchThreshold),
                               channel: channelFactory(LiveResult(index.current)), statistics: statistics)
        lastDataVersion = dataVersion
        lastSchemaVersion = schemaVersion
        do {
            try trackChanges(db, logFrom: logStart)
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
    }

    /// The identity values of the first fetch whose storage class `ID` never decodes: the
    /// request declares the wrong identity type (`nil` when there is none).
    static func identityTypeMismatch(in index: LiveIndex) -> (found: SQLStorageClass, examples: [SQLValue])? {
        let examples = index.invalidIdentities { !$0.isNull && !ID.decodes(SQLStorageClass(of: $0)) }
        guard let first = examples.first else { return nil }
        return (SQLStorageClass(of: first), examples)
    }

    /// Installs, for the current plan, what reports changes: the TEMP triggers (replacing those of
    /// an earlier plan) and the change log, when the database has one — read from `logStart`, where
    /// it stood before the fetch the query shows (`nil`: from its end, for a fetch yet to come).
    func trackChanges(_ db: Database, logFrom logStart: ChangeLogFollower.Start?) throws {
        if let triggers {
            try triggers.uninstall(db)
            self.triggers = nil
        }
        try installTriggers(db)
        try followChangeLog(db, from: logStart)
    }

    private func installTriggers(_ db: Database) throws {
        guard !db.configuration.readonly, let triggers = ChangeTriggers(
            schema: plan.isIncremental ? plan.schema : nil, joins: plan.isIncremental ? plan.joins : [],
            signalTables: plan.silentTables, source: source) else { return }
        try triggers.install(db) { [weak self] rowid in self?.touchedByTrigger(rowid) }
        self.triggers = triggers
    }

    /// Stops following the database: no observer, no triggers, nothing delivered.
    func stop(_ db: Database, touchingDatabase: Bool = true) {
        guard tracker.state.stop() else { return }
        db.remove(transactionObserver: self)
        guard touchingDatabase else {
            triggers = nil
            follower = nil
            return
        }
        do {
            try triggers?.uninstall(db)
            try follower?.uninstall(db)
        } catch {
            // The connection is closing or the table is gone: its TEMP triggers went with it (and
            // an unremoved reader position expires).
        }
        triggers = nil
        follower = nil
    }

    /// Whether the whole result can be indexed before `open` returns: the base table spans fewer
    /// than `limit` rowids (two O(log n) lookups, before any row is read). `false` when that cannot
    /// be told cheaply — no base rowid table, or the look failed (the first screen is then read,
    /// which is correct at any size).
    static func isSmall(_ plan: QueryPlan, _ db: Database, limit: Int) -> Bool {
        guard plan.isIncremental, let rowid = plan.schema?.rowidName else { return false }
        do {
            // One subquery each: SQLite answers a lone min() or max() of the rowid from the b-tree's
            // ends, but scans the table for both in one SELECT. NULL for an empty table; REAL if
            // the span overflows an integer.
            let table = "main." + plan.table.quotedIdentifier
            let span = try Double.fetchOne(db, sql: "SELECT (SELECT max(\(rowid)) FROM \(table)) - (SELECT min(\(rowid)) FROM \(table))")
            return (span ?? 0) < Double(limit)
        } catch {
            return false
        }
    }

    // MARK: - TransactionObserver

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        // No side effect here: GRDB also asks when it merely compiles a statement.
        if eventKind.tableName.caseInsensitiveCompare(plan.table) == .orderedSame {
            guard plan.isIncremental, plan.hasVersionColumn, case let .update(_, columns) = eventKind else { return true }
            // With a version column, an UPDATE of columns the query does not read changes nothing
            // it shows — unless it changes the rowid.
            if let alias = plan.schema?.rowidAlias, columns.contains(where: { $0.caseInsensitiveCompare(alias) == .orderedSame }) { return true }
            return plan.region.isModified(byEventsOfKind: eventKind)
        }
        // Joined tables: their TEMP triggers report the result rows that meet a changed row.
        let table = eventKind.tableName.lowercased()
        guard !plan.joinedTables.contains(table), plan.otherTables.contains(table) else { return false }
        if case let .update(_, columns) = eventKind, let keys = plan.conflictColumns[table],
           keys.contains("*") || columns.contains(where: { keys.contains($0.lowercased()) }) {
            return true   // an UPDATE OR REPLACE may delete a row the query reads
        }
        return plan.region.isModified(byEventsOfKind: eventKind)
    }

    func databaseDidChange() {
        // Changes GRDB could not describe (`Database.notifyChanges(in:)`): refetch.
        tracker.state.needsRefetch(.undescribedChanges)
    }

    func databaseDidChange(with event: DatabaseEvent) {
        guard tracker.state.wantsRows else { return }
        if event.tableName.caseInsensitiveCompare(plan.table) == .orderedSame {
            guard let reason = plan.mode.refetchReason else {
                if !tracker.state.touched(event.rowID) { stopObservingDatabaseChangesUntilNextTransaction() }
                return
            }
            tracker.state.needsRefetch(reason)
        } else {
            tracker.state.needsRefetch(plan.mode.refetchReason ?? .tableChanged(event.tableName))
        }
        stopObservingDatabaseChangesUntilNextTransaction()
    }

    private func touchedByTrigger(_ rowid: Int64?) {
        guard tracker.state.wantsRows else { return }
        guard let rowid else {
            tracker.state.needsRefetch(plan.mode.refetchReason ?? .tableWithoutRowidChanged)
            return
        }
        tracker.state.touched(rowid)
    }

    func databaseDidCommit(_ db: Database) {
        let start = ContinuousClock.now
        do {
            try follower?.collectOwn(db)
        } catch {
            // The log is broken: the next check of other connections' commits says so.
        }
        // No PRAGMA data_version here: our own commits do not move it, and reading it now would
        // swallow a commit another connection made meanwhile, which the poller must still see.
        perform(tracker.state.committed(), db, start: start)
    }

    /// Completes the first fetch, then looks for other connections' commits at once: looks made
    /// while the rest was read found nothing by design (it is read from the state the query
    /// opened at), so a commit they were woken for would wait for the next file event or poll.
    func finishBuild(_ builder: IndexBuilder?, _ db: Database) {
        tracker.finishBuild(builder, reads(db))
        do {
            try checkExternalChanges(db)
        } catch {
            // The query is behind (see `checkExternalChanges`): the next look refetches. Busy is
            // not news; anything else is delivered.
            let failure = LiveQueryError.from(error, sql: nil)
            if !failure.isBusy { channel.deliver(.failure(failure)) }
        }
    }

    /// Carries out what the state decided; a failure is delivered, and the next commit or poll
    /// refetches.
    func perform(_ action: TrackingState.Action, _ db: Database, start: ContinuousClock.Instant) {
        do {
            try carryOut(action, db, start: start)
        } catch {
            reportFailure(error, db)
        }
    }

    /// The current plan's reads on `db`: what the engine-independent half asks of SQLite.
    func reads(_ db: Database) -> SQLiteReads {
        SQLiteReads(plan: plan, db: db, plannedSchemaVersion: lastSchemaVersion, committed: committed)
    }

    func carryOut(_ action: TrackingState.Action, _ db: Database, start: ContinuousClock.Instant) throws {
        try tracker.carryOut(action, reads(db), start: start)
    }

    /// Delivers a failure met while following the database; the index is behind from then on.
    func reportFailure(_ error: any Error, _ db: Database) {
        tracker.reportFailure(failure(from: error, db))
    }

    /// Classifies an error met while following the database. A statement that fails to run once
    /// the schema changed since the query planned it is ``LiveQueryError/schemaChanged(_:)``: by
    /// the schema's version, not by SQLite's message.
    func failure(from error: any Error, _ db: Database) -> LiveQueryError {
        SQLiteReads.classify(LiveQueryError.from(error, sql: nil), db, plannedSchemaVersion: lastSchemaVersion)
    }

    func databaseDidRollback(_ db: Database) {
        tracker.state.rolledBack()
    }

    // MARK: - The rest of the first fetch

    /// Fetches every row of `plan` on `result`'s connection (a pool's reader, on a snapshot taken
    /// when the query opened; or the writer) and hands them to `finish` — or reports the failure.
    /// `plan` is passed in, not read from the core: a reader runs off the writer's queue.
    func buildRest(_ plan: QueryPlan, from result: Result<Database, any Error>, finish: (IndexBuilder?) -> Void) {
        do {
            let db = try result.get()
            var builder = index.makeBuilder(layout: plan.layout)
            try SQLiteReads(plan: plan, db: db).fetchAll(into: &builder, mayBeLarge: true)
            let count = builder.count
            statistics.update { $0.rowsRead += count }
            finish(builder)
        } catch {
            channel.deliver(.failure(LiveQueryError.from(error, sql: plan.fetchSQL, arguments: plan.arguments)))
            finish(nil)
        }
    }

    /// Switches to `plan` (a new filter, sort or sections) with one changeset from the displayed
    /// result to the new one — delivered even when empty, so the caller always gets its answer.
    func change(to plan: QueryPlan, _ db: Database) throws {
        tracker.state.requestChanged()   // the rest of the first fetch, if still under way, belongs to the old request
        let logStart = options.followsChangeLog ? ChangeLogFollower.start(db) : nil
        let previous = self.plan
        self.plan = plan
        tracker.layout = plan.layout
        committed.removeAll()   // the new request's records read other columns, at the same tokens
        do {
            try tracker.refetch(reads(db), reason: .criteriaChanged, start: ContinuousClock.now, deliversEmptyChange: true)
        } catch {
            self.plan = previous   // a failed fetch changes nothing
            tracker.layout = previous.layout
            throw error
        }
        try trackChanges(db, logFrom: logStart)
    }
}
