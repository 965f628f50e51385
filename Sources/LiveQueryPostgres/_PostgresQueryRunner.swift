import Foundation
import ListDiff
import LiveQuery
import PostgresNIO

/// What the engine asks of one open query, whatever its identity type.
protocol _PostgresQueryFollowing: AnyObject, Sendable {
    /// Every table the query reads: their commits concern it.
    var relationsRead: Set<UInt32> { get }
    /// Whether the next round has work for it even if nothing was committed (it is behind, or
    /// holds commits absorbed but not applied).
    var needsRound: Bool { get }
    /// Notes what a committed transaction did to the query's tables.
    func absorb(_ commit: _DecodedCommit, relations: [UInt32: _PgRelation])
    /// Applies the absorbed transactions, reading in the round's snapshot; `version` is the
    /// end of the last one. A failing read is the query's failure; a lost connection throws (the
    /// round fails, for every query).
    func apply(version: PostgresLSN, _ session: _PgSession) async throws(PostgresLiveQueryError)
    /// The engine lost commits (a new connection and slot), or a round failed: the next round
    /// refetches.
    func lostTrack(_ error: PostgresLiveQueryError)
    func finish()
}

/// One open query's following: its plan, tracker and row keys, and the commit positions its
/// results hold at. `@unchecked Sendable`: every method runs on the engine actor, one round at a
/// time (the engine's round gate), so ``tracker``'s state, ``keys`` and ``lastFailure`` are never
/// touched concurrently; ``versions`` is under a lock for readers on other threads.
final class _PostgresQueryRunner<ID: LiveIdentity>: _PostgresQueryFollowing, @unchecked Sendable {
    /// The request, planned again when a table's shape changes.
    let request: PostgresLiveQueryRequest<ID>
    let publishesViaRoot: Bool
    private let planLock = NSLock()
    private var storedPlan: _PostgresPlan
    /// How the query is read and kept now (read from any thread; replaced on the engine actor).
    var plan: _PostgresPlan {
        get { planLock.withLock { storedPlan } }
        set { planLock.withLock { storedPlan = newValue } }
    }
    /// Whether a table's shape changed since the plan was made: the next round plans again.
    private var needsPlan = false
    let tracker: _LiveTracker<ID>
    var keys: _RowKeys
    /// Per joined role, the keys (text) of its rows the absorbed commits changed.
    private var pendingLookups: [Int: Set<String>] = [:]
    /// Past this many rows touched in one round, a refetch is cheaper.
    private let refetchThreshold: Int
    let versionLock = NSLock()
    var versions = _StateVersions()
    var appliedVersion: PostgresLSN
    /// The end of the last absorbed commit that touched the query's tables, until it is applied:
    /// what a result that round delivers is at (commits after it in the round do not change it,
    /// so every follower of the database gives the result the same position).
    var lastTouch: UInt64?
    /// When the last apply failed; `nil` once one succeeds.
    var lastFailure: ContinuousClock.Instant?
    /// The rest of the first fetch, once read (in the snapshot the first screen was read in), and
    /// who waits for the whole result; under ``restLock``.
    let restLock = NSLock()
    var rest: Result<_FirstFetchRest, PostgresLiveQueryError>?
    var restWaiters: [CheckedContinuation<Void, Never>] = []
    /// Whether the result is whole (not a first screen waiting for the rest).
    var isWhole = true

    /// The end of the last commit the latest result includes.
    var version: PostgresLSN { versionLock.withLock { appliedVersion } }

    /// The position a delivered result is the query's result at.
    func position(of state: ListStateID) -> PostgresLSN? {
        versionLock.withLock { versions.position(of: state) }.map(PostgresLSN.init)
    }

    /// Whether a delivered result is the query's result at `position`.
    func holds(_ state: ListStateID, at position: PostgresLSN) -> Bool {
        versionLock.withLock { versions.holds(state, at: position.value) }
    }

    var relationsRead: Set<UInt32> { plan.relationsRead }

    var needsRound: Bool {
        if tracker.state.isBehind || !pendingLookups.isEmpty || hasRest || needsPlan { return true }
        if case let .rows(rows) = tracker.state.transaction { return !rows.isEmpty }
        return true
    }

    static func canonicalizer() -> _IdentityCanonicalizer { { ID(identityValue: $0)?.identityValue } }

    /// Reads the result in the current snapshot, which sees exactly the commits through `version`:
    /// the whole of it, or, with `firstScreen` and more rows than that, its first `firstScreen`
    /// rows (the rest then comes through ``readRest(on:then:)``).
    init(request: PostgresLiveQueryRequest<ID>, plan: _PostgresPlan, publishesViaRoot: Bool, version: PostgresLSN, refetchThreshold: Int,
         firstScreen: Int?, _ session: _PgSession) async throws(PostgresLiveQueryError) {
        self.request = request
        self.publishesViaRoot = publishesViaRoot
        storedPlan = plan
        self.refetchThreshold = refetchThreshold
        var keys = _RowKeys(integerIdentity: plan.identityIsRowKey)
        var builder = _IndexBuilder(layout: plan.layout, canonicalIdentity: Self.canonicalizer())
        // Only a SELECT written by the plan may take a LIMIT; a refetched one is read whole.
        let screen = plan.refetchReason == nil ? firstScreen : nil
        var entries = try await _PostgresRows.read(plan, plan.fetchSQL + (screen.map { " LIMIT \($0 + 1)" } ?? ""), plan.arguments, &keys, session)
        let isBuilding = screen.map { entries.count > $0 } ?? false
        if let screen, isBuilding { entries.removeLast(entries.count - screen) }
        for entry in entries { builder.append(entry) }
        let index = _LiveIndex(builder: builder, identityType: "\(ID.self)", isComplete: !isBuilding)
        let examples = index.invalidIdentities { !$0.isNull && ID(identityValue: $0) == nil }
        guard examples.isEmpty else { throw .identityTypeMismatch(column: plan.identity.name, declared: "\(ID.self)") }
        let statistics = _StatisticsBox()
        let count = builder.count
        statistics.update { $0.rowsRead += count }
        tracker = _LiveTracker(index: index, layout: plan.layout, state: _TrackingState(isBuilding: isBuilding, refetchThreshold: refetchThreshold),
                               channel: EventChannel(initial: LiveResult(index.current), callbackQueue: nil, onEvent: nil),
                               statistics: statistics)
        self.keys = keys
        isWhole = !isBuilding
        appliedVersion = version
        // A first screen is not the query's result at any position: only the whole result is.
        if !isBuilding, let state = tracker.channel.latestResult.stateID { versions.started(state, at: version.value) }
    }

    func absorb(_ commit: _DecodedCommit, relations: [UInt32: _PgRelation]) {
        let read = plan.relationsRead
        let touching = !commit.reshaped.isDisjoint(with: read) || !commit.truncated.isDisjoint(with: read)
            || read.contains { commit.touched[$0] != nil }
        versionLock.withLock { versions.committed(at: commit.endLSN.value, touching: touching) }
        if touching { lastTouch = commit.endLSN.value }
        if !commit.reshaped.isDisjoint(with: read) { needsPlan = true }
        guard touching, tracker.state.wantsRows else { return }
        if !commit.reshaped.isDisjoint(with: read) {
            tracker.state.needsRefetch(.schemaChanged)
            return
        }
        for oid in commit.truncated.intersection(read).sorted() {
            tracker.state.needsRefetch(.tableChanged(relations[oid]?.name ?? plan.name(of: oid)))
            return
        }
        for oid in plan.otherRelations.sorted() where commit.touched[oid] != nil {
            tracker.state.needsRefetch(.tableChanged(relations[oid]?.name ?? plan.name(of: oid)))
            return
        }
        if let reason = plan.refetchReason {
            tracker.state.needsRefetch(reason)
            return
        }
        let base = plan.roles[0].table
        if let tuples = commit.touched[base.oid] {
            for tuple in tuples {
                guard let identity = Self.key(of: tuple, in: relations[base.oid], column: plan.identity) else {
                    tracker.state.needsRefetch(.undescribedChanges)
                    return
                }
                guard tracker.state.touched(keys.rowKey(for: identity)) else { return }
            }
        }
        for lookup in plan.joins {
            let table = plan.roles[lookup.role].table
            guard let tuples = commit.touched[table.oid] else { continue }
            for tuple in tuples {
                guard let key = Self.key(of: tuple, in: relations[table.oid], column: lookup.key) else {
                    tracker.state.needsRefetch(.undescribedChanges)
                    return
                }
                pendingLookups[lookup.role, default: []].insert(Self.text(of: key))
            }
            if pendingLookups[lookup.role, default: []].count > refetchThreshold {
                tracker.state.needsRefetch(.tooManyRowsChanged(threshold: refetchThreshold))
                pendingLookups = [:]
                return
            }
        }
    }

    /// The value of `column` (a key column) in a change's key tuple, as the index holds it.
    static func key(of tuple: [_PgTupleValue], in relation: _PgRelation?, column: _PgTable.Column) -> SQLValue? {
        guard let relation else { return nil }
        let keyColumns = relation.columns.filter(\.isKey)
        guard keyColumns.count == tuple.count, let index = keyColumns.firstIndex(where: { $0.name == column.name }),
              case let .text(text) = tuple[index] else { return nil }
        return _PgType.keyValue(text: text, oid: column.typeOID)
    }

    /// Marks the base rows that meet the joined rows the absorbed commits changed, read in the
    /// round's snapshot.
    private func lookUpJoinedRows(_ session: _PgSession) async throws(PostgresLiveQueryError) {
        guard !pendingLookups.isEmpty else { return }
        let pending = pendingLookups
        pendingLookups = [:]
        guard tracker.state.wantsRows else { return }
        for lookup in plan.joins {
            guard let values = pending[lookup.role], !values.isEmpty else { continue }
            var binds = PostgresBindings()
            binds.append(values.sorted())
            for row in try await session.rows(lookup.sql, binds) {
                guard let cell = row.first(where: { _ in true }) else { continue }
                let identity = _PgType.value(cell.bytes, oid: UInt32(truncatingIfNeeded: cell.dataType.rawValue))
                guard tracker.state.touched(keys.rowKey(for: identity)) else { return }
            }
        }
    }

    /// Runs `body` in its own savepoint of the round's transaction, so that a failing read leaves
    /// the transaction, and the other queries' reads in the same snapshot, as they were. The
    /// query's failure is returned; a lost connection is thrown.
    func inSavepoint(_ session: _PgSession, _ body: () async throws(PostgresLiveQueryError) -> Void)
        async throws(PostgresLiveQueryError) -> PostgresLiveQueryError? {
        try await session.control.execute("SAVEPOINT livelist_query")
        do throws(PostgresLiveQueryError) {
            try await body()
        } catch {
            if error.isLostConnection { throw error }
            try await session.control.execute("ROLLBACK TO SAVEPOINT livelist_query")
            return error
        }
        try await session.control.execute("RELEASE SAVEPOINT livelist_query")
        return nil
    }

    func apply(version: PostgresLSN, _ session: _PgSession) async throws(PostgresLiveQueryError) {
        let start = ContinuousClock.now
        if !pendingLookups.isEmpty {
            if let error = try await inSavepoint(session, { () throws(PostgresLiveQueryError) in try await lookUpJoinedRows(session) }) {
                pendingLookups = [:]
                _ = tracker.state.committed()
                versionLock.withLock { versions.failed() }
                tracker.reportFailure(.underlying(error))
                lastFailure = .now
                return
            }
        }
        if tracker.isBuilding {
            // Commits while the rest of the first fetch is read are remembered with the build; the
            // rest, once here, is completed with them in this round's snapshot.
            _ = tracker.state.committed()
            guard hasRest else { return }
            try await completeFirstFetch(version: version, session)
            return
        }
        var action = tracker.state.committed()
        if action == .none { action = tracker.state.nothingCommittedElsewhere() }
        if needsPlan, action == .none { action = .refetch(.schemaChanged) }
        if action == .none {
            versionLock.withLock {
                versions.committed(at: version.value, touching: false)
                appliedVersion = max(appliedVersion, version)
            }
            return
        }
        // A query that keeps failing (its filter divides by zero on a new row, a column it sorts
        // by was dropped) retries once a second, not every round, and says so once.
        if action == .refetch(.recovering), let failed = lastFailure, failed.duration(to: start) < .seconds(1) { return }
        let position = lastTouch ?? version.value
        lastTouch = nil
        versionLock.withLock { versions.applying(at: position, replacing: tracker.channel.latestResult.stateID) }
        let failure = try await inSavepoint(session) { () throws(PostgresLiveQueryError) in
            if needsPlan {
                // A table's shape changed: its columns, their types and collations are read
                // again, and the result fetched with the new plan.
                let fresh = try await _PostgresPlanner<ID>.make(request, publishesViaRoot: publishesViaRoot, session)
                plan = fresh
                tracker.layout = fresh.layout
                needsPlan = false
            }
            try await carryOut(action, session, start: start)
        }
        if let error = failure {
            versionLock.withLock { versions.failed() }
            if lastFailure == nil {
                tracker.reportFailure(.underlying(error))
            } else {
                tracker.state.failed()
            }
            lastFailure = .now
            return
        }
        lastFailure = nil
        let state = tracker.channel.latestResult.stateID
        versionLock.withLock {
            if let state { versions.settled(state, at: position) }
            // The round's commits after its last touching one did not touch the query.
            versions.committed(at: version.value, touching: false)
            appliedVersion = max(appliedVersion, version)
        }
    }

    private func carryOut(_ action: _TrackingState.Action, _ session: _PgSession, start: ContinuousClock.Instant) async throws(PostgresLiveQueryError) {
        do {
            switch action {
            case .none:
                break
            case let .reread(rows):
                let reads = try await reread(rows, session)
                try tracker.carryOut(action, reads, start: start)
                keys.forget(rows.filter { tracker.index.entry(forRowid: $0) == nil })
            case .refetch:
                var fresh = _RowKeys(integerIdentity: plan.identityIsRowKey)
                let entries = try await _PostgresRows.read(plan, plan.fetchSQL, plan.arguments, &fresh, session)
                keys = fresh
                try tracker.carryOut(action, _PrefetchedReads(entries: entries), start: start)
            }
        } catch let error as PostgresLiveQueryError {
            throw error
        } catch {
            throw .underlying(error)
        }
    }

    func reread(_ rows: Set<Int64>, _ session: _PgSession) async throws(PostgresLiveQueryError) -> _PrefetchedReads {
        var entries: [IndexEntry] = []
        let identities = rows.compactMap { keys.identity(of: $0) }
        var offset = 0
        repeat {
            let batch = identities[offset..<min(offset + 5_000, identities.count)]
            offset += batch.count
            var binds = plan.arguments
            binds.append(batch.map(Self.text(of:)))
            entries += try await _PostgresRows.read(plan, plan.rereadSQL, binds, &keys, session)
        } while offset < identities.count
        tracker.statistics.update { $0.rowsRead += entries.count }
        return _PrefetchedReads(entries: entries)
    }

    static func text(of identity: SQLValue) -> String {
        switch identity {
        case let .integer(value): String(value)
        case let .text(text): text.string
        default: identity.description
        }
    }

    /// The SELECT's columns of `rows`, read now and kept only where a row still has the content
    /// token `rows` give it: a row that changed since is left out (its commit's update reloads it).
    /// - Complexity: one statement per 5,000 rows.
    func payloads(of rows: [LiveRow<ID>], _ session: _PgSession) async throws(PostgresLiveQueryError) -> [ID: [SQLValue]] {
        var wanted: [SQLValue: (id: ID, token: UInt64)] = [:]
        for row in rows { wanted[row.id.identityValue] = (row.id, row.version) }
        var payloads: [ID: [SQLValue]] = [:]
        let identities = Array(wanted.keys)
        for start in stride(from: 0, to: identities.count, by: 5_000) {
            let batch = identities[start..<min(start + 5_000, identities.count)].map(Self.text(of:))
            for (row, values) in try await _PostgresRows.payloads(plan, identities: batch, session) {
                let canonical = ID(identityValue: row.identity)?.identityValue ?? row.identity
                guard let wanted = wanted[canonical], wanted.token == row.token else { continue }
                payloads[wanted.id] = values
            }
        }
        return payloads
    }

    func lostTrack(_ error: PostgresLiveQueryError) {
        // Commits may have been missed: the next result is at the round that reads it, whatever
        // touched the query before.
        lastTouch = nil
        versionLock.withLock { versions.failed() }
        tracker.reportFailure(.underlying(error))
    }

    func finish() {
        _ = tracker.state.stop()
        tracker.channel.finish()
        finishWaiting()
    }
}
