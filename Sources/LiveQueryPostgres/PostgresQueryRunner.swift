import Foundation
import ListDiff
import LiveQueryCore
import PostgresNIO

/// One open query's following: its plan, tracker and row keys, and the commit positions its
/// results hold at. `@unchecked Sendable`: every method but the readers below runs for the engine
/// actor, one round at a time (the engine's gate) — or, read apart, for its lane alone, the
/// engine holding back what it would tell it meanwhile (`HeldForLane`) — so ``tracker``'s state, ``keys``,
/// ``work`` and ``takenWork`` are never touched concurrently (the channel's tap runs there too, inside the
/// tracker's deliveries); ``deliveries`` (the positions), the plan, the rest of the first fetch and
/// the contents kept from reads are each a lock box of their own, for readers on other threads.
final class PostgresQueryRunner<ID: LiveIdentity>: PostgresQueryFollowing, @unchecked Sendable {
    /// The request, planned again when a table's shape changes.
    let request: PostgresLiveQueryRequest<ID>
    let publishesViaRoot: Bool
    private let storedPlan: Locked<PostgresPlan>
    /// How the query is read and kept now (read from any thread; replaced on the engine actor).
    var plan: PostgresPlan {
        get { storedPlan.withLock { $0 } }
        set { storedPlan.withLock { $0 = newValue } }
    }
    /// The commits absorbed and not applied, a plan to make again, the last failure.
    var work = QueryWork()
    var needsPlan: Bool { work.needsPlan }
    var absorbed: [AbsorbedCommit] { work.absorbed }
    let tracker: LiveTracker<ID>
    var keys: RowKeys
    /// Past this many rows touched in one round, a refetch is cheaper.
    let refetchThreshold: Int
    /// The positions each delivered result holds at, and what a delivery under way stands for.
    let deliveries = Locked(PositionedDeliveries())
    /// The contents the query's latest reads carried, by canonical identity, with their tokens
    /// (``keep(_:)``): read by the server's payload reads on other threads.
    let readContents = Locked<[SQLValue: (token: UInt64, values: [SQLValue])]>([:])
    let progress: EngineProgress
    let positioned: PositionedChannel<ID>
    /// A first screen's rest — being read (in the snapshot the first screen was read in), or read
    /// — where the whole result will hold from, and who waits for it.
    let firstFetch: Locked<FirstFetchState<Result<FirstFetchRest, PostgresLiveQueryError>, CheckedContinuation<Void, Never>>>
    /// Grouped by the base table's key: per aggregated table (by role), the group of each of its
    /// rows that belongs to a group the result holds.
    var childLinks: [Int: ChildLinks] = [:]
    /// The work taken for a batch of re-reads (`PostgresQueryRunner+Batch.swift`), or for reading
    /// the query apart on a lane.
    var takenWork = TakenWork<Work>.none

    /// The latest position the query announced: the end of the last commit that touched its
    /// tables and that its latest result includes.
    var version: PostgresLSN { PostgresLSN(deliveries.withLock { $0.positions.latest }) }

    /// The position a delivered result is the query's result at.
    func position(of state: ListStateID) -> PostgresLSN? {
        deliveries.withLock { $0.positions.position(of: state) }.map(PostgresLSN.init)
    }

    /// Whether a delivered result is the query's result at `position`.
    func holds(_ state: ListStateID, at position: PostgresLSN) -> Bool {
        let followed = progress.applied
        return deliveries.withLock { $0.positions.holds(state, at: position.value, followed: followed) }
    }

    var relationsRead: Set<UInt32> { plan.relationsRead }

    var awaitsRound: Bool { needsRound || isDetached || tracker.state.isBehind || tracker.isBuilding }

    var refetches: Bool { plan.refetchReason != nil }

    /// Whether it is being read apart (by the engine's refetch lane): no round applies it meanwhile.
    var isDetached: Bool { takenWork.isDetached }

    var needsRound: Bool {
        if isDetached { return false }
        return work.needsRound(isBehind: tracker.state.isBehind, hasRest: hasRest, at: .now)
    }

    static func canonicalizer() -> IdentityCanonicalizer { { ID(identityValue: $0)?.identityValue } }

    /// Reads the result in the current snapshot, which sees exactly the commits through the
    /// round's position: the whole of it, or, with `firstScreen` and more rows than that, its
    /// first `firstScreen` rows (the rest then comes through ``readRest(on:then:)``). The whole
    /// result holds from `holdsFrom`, the end of the last commit before that touched its tables.
    init(request: PostgresLiveQueryRequest<ID>, plan: PostgresPlan, publishesViaRoot: Bool, holdsFrom: UInt64, progress: EngineProgress,
         refetchThreshold: Int, firstScreen: Int?, _ session: PostgresSession) async throws(PostgresLiveQueryError) {
        self.request = request
        self.publishesViaRoot = publishesViaRoot
        self.progress = progress
        storedPlan = Locked(plan)
        self.refetchThreshold = refetchThreshold
        var keys = RowKeys(integerKeys: plan.integerKeys)
        var builder = IndexBuilder(layout: plan.layout, canonicalIdentity: Self.canonicalizer())
        // Only a SELECT written by the plan may take a LIMIT; a refetched one is read whole.
        let screen = plan.refetchReason == nil && plan.children.isEmpty ? firstScreen : nil
        var entries = try await PostgresRows.read(plan, plan.fetchSQL + (screen.map { " LIMIT \($0 + 1)" } ?? ""), .text(plan.arguments), &keys, session)
        let isBuilding = screen.map { entries.count > $0 } ?? false
        if let screen, isBuilding { entries.removeLast(entries.count - screen) }
        for entry in entries { builder.append(entry) }
        let index = LiveIndex(builder: builder, identityType: "\(ID.self)", isComplete: !isBuilding)
        let examples = index.invalidIdentities { !$0.isNull && ID(identityValue: $0) == nil }
        guard examples.isEmpty else { throw .identityTypeMismatch(column: plan.identity.name, declared: "\(ID.self)") }
        let statistics = StatisticsBox()
        let count = builder.count
        statistics.update { $0.rowsRead += count }
        let initial = LiveResult<ID>(index.current)
        tracker = LiveTracker(index: index, layout: plan.layout, state: TrackingState(isBuilding: isBuilding, refetchThreshold: refetchThreshold),
                               channel: EventChannel(initial: initial, callbackQueue: nil, onEvent: nil),
                               statistics: statistics)
        self.keys = keys
        firstFetch = Locked(FirstFetchState(whole: !isBuilding, holdsFrom: holdsFrom))
        // A first screen is not the query's result at any position: only the whole result is.
        if !isBuilding, let state = initial.stateID { deliveries.withLock { $0.positions.read(state, from: holdsFrom) } }
        positioned = PositionedChannel(initial: initial, position: isBuilding ? nil : PostgresLSN(holdsFrom))
        childLinks = try await Self.childLinks(plan, groups: entries.compactMap { keys.value(of: $0.rowid) }, session)
        tracker.channel.tap { [weak self] event in self?.tapped(event) }
    }

    /// Records what a delivered result stands for before anyone sees it (what the delivery under
    /// way, ``delivering(_:shown:_:)``, stands for), and passes it on with its position.
    private func tapped(_ event: LiveQueryEvent<ID>) {
        switch event {
        case .initial:
            break
        case let .update(update):
            let position = deliveries.withLock { $0.delivered(update.result.stateID) }
            positioned.send(.update(update, position: position.map(PostgresLSN.init)))
        case let .failure(failure):
            positioned.send(.failure(failure))
        }
    }

    /// The current result stands again after a step that did not change it.
    private func unchanged(first: UInt64, last: UInt64) {
        let known = deliveries.withLock { $0.unchanged(first: first, last: last) }
        if known { positioned.send(.unchanged(through: PostgresLSN(last))) }
    }

    /// Has the tracker deliver (`body`) a result that stands for `standsFor`; `shown`: the state
    /// of the result shown before. Returns what the delivery came to, once the `unchanged` event
    /// it calls for is sent (a step, or a result read whole, that left the result as it was).
    @discardableResult
    func delivering(_ standsFor: PositionedDeliveries.StandsFor, shown: ListStateID? = nil,
                    _ body: () throws -> Void) rethrows -> PositionedDeliveries.Outcome {
        deliveries.withLock { $0.open(standsFor, shown: shown) }
        let outcome: PositionedDeliveries.Outcome
        do {
            try body()
            outcome = deliveries.withLock { $0.close() }
        } catch {
            deliveries.withLock { _ = $0.close() }
            throw error
        }
        if case let .unchanged(through) = outcome { positioned.send(.unchanged(through: PostgresLSN(through))) }
        return outcome
    }

    /// Runs `body` in its own savepoint of the round's transaction (when `guarded`), so that a
    /// failing read leaves the transaction, and the other queries' reads in the same snapshot, as
    /// they were. The query's failure is returned; a lost connection is thrown.
    func inSavepoint(_ session: PostgresSession, guarded: Bool = true, _ body: () async throws(PostgresLiveQueryError) -> Void)
        async throws(PostgresLiveQueryError) -> PostgresLiveQueryError? {
        guard guarded else {
            do throws(PostgresLiveQueryError) {
                try await body()
            } catch {
                if error.isLostConnection { throw error }
                return error
            }
            return nil
        }
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

    /// What an apply does, taken at once: the commits, the action the tracker decided, whether
    /// the plan is made again.
    struct Work {
        var commits: [AbsorbedCommit]
        var action: TrackingState.Action
        var replan: Bool
    }

    /// Takes the work for an apply, now: what commits absorbed later (while it is read apart) do
    /// waits for the next.
    func takeWork(commits: [AbsorbedCommit]) -> Work {
        var action = tracker.state.committed()
        if action == .none { action = tracker.state.nothingCommittedElsewhere() }
        let replan = work.takeReplan()
        if replan, action == .none { action = .refetch(.schemaChanged) }
        return Work(commits: commits, action: action, replan: replan)
    }

    func detach() {
        takenWork.detach(takeWork(commits: work.takeCommits()))
    }

    func reattach() {
        takenWork.handBack()
    }

    func apply(round: UInt64, _ session: PostgresSession, guarded: Bool) async throws(PostgresLiveQueryError) -> Bool {
        guard needsRound || isDetached else { return true }
        // Commits absorbed while this one is read apart are held by the engine until it is handed back.
        defer { deliveries.withLock { $0.positions.pendingFrom = work.pendingFrom } }
        // A query that failed before, or whose tables changed shape, reads guarded.
        let guarded = guarded || tracker.state.isBehind || needsPlan || takenWork.detached?.replan == true
        let start = ContinuousClock.now
        let taken: Work
        if let detached = takenWork.takeDetached() {
            taken = detached
        } else {
            var commits = work.takeCommits()
            if commits.contains(where: { !$0.lookups.isEmpty }) {
                var cache = RoundLookups()
                let failure: PostgresLiveQueryError?
                do throws(PostgresLiveQueryError) {
                    failure = try await inSavepoint(session, guarded: guarded, { () throws(PostgresLiveQueryError) in
                        try await lookUpJoinedRows(&commits, session, &cache)
                    })
                } catch {
                    // The connection went: the commits wait for the next round, with the rows found
                    // so far. Looked up again there, a joined row is read anew; a group move made
                    // here is not seen again, but the group it left is among those rows already.
                    work.putBack(commits)
                    throw error
                }
                if let failure {
                    if failure.isTransient {
                        // Refused behind another statement's failure: not this query's.
                        work.putBack(commits)
                        return false
                    }
                    _ = tracker.state.committed()
                    fail(failure, before: commits.first?.end)
                    return guarded
                }
            }
            if tracker.isBuilding {
                // Commits while the rest of the first fetch is read are remembered with the build; the
                // rest, once here, is completed with them in this round's snapshot.
                _ = tracker.state.committed()
                guard hasRest else { return true }
                try await completeFirstFetch(round: round, session)
                return true
            }
            taken = takeWork(commits: commits)
        }
        return try await finishApply(taken, round: round, session, guarded: guarded, start: start, prefetched: nil)
    }

    /// Carries out the work taken for an apply: `prefetched`, the rows a `.reread` action needs
    /// when they were read already (with other queries', in one statement).
    func finishApply(_ taken: Work, round: UInt64, _ session: PostgresSession, guarded: Bool, start: ContinuousClock.Instant,
                     prefetched: PrefetchedReads?) async throws(PostgresLiveQueryError) -> Bool {
        let commits = taken.commits
        if taken.action == .none {
            // Commits touched the query's tables and left its rows as they were.
            if let first = commits.first?.end, let last = commits.last?.end { unchanged(first: first, last: last) }
            return true
        }
        // A query that keeps failing (its filter divides by zero on a new row, a column it sorts
        // by was dropped) retries once a second, not every round, and says so once.
        if taken.action == .refetch(.recovering), work.recoveryWaits(at: start) {
            if taken.replan { work.planAgain() }
            return true
        }
        var applied: UInt64?
        let failure: PostgresLiveQueryError?
        do throws(PostgresLiveQueryError) {
            failure = try await inSavepoint(session, guarded: guarded) { () throws(PostgresLiveQueryError) in
                if taken.replan {
                    // A table's shape changed: its columns, their types and collations are read
                    // again, and the result fetched with the new plan.
                    let fresh = try await PostgresPlanner<ID>.make(request, publishesViaRoot: publishesViaRoot, session)
                    plan = fresh
                    tracker.layout = fresh.layout
                }
                try await carryOut(taken.action, commits, round: round, session, start: start, applied: &applied, prefetched: prefetched)
            }
        } catch {
            lostConnection(during: taken, applied: applied)
            throw error
        }
        if let error = failure, error.isTransient {
            // Refused behind another statement's failure: not this query's; its work waits for
            // the next round.
            lostConnection(during: taken, applied: applied)
            return false
        }
        if let error = failure {
            // A plan that could not be made is made again next time.
            if taken.replan { work.planAgain() }
            fail(error, before: applied.map { $0 + 1 } ?? commits.first?.end)
            return guarded
        }
        work.clearFailure()
        return true
    }

    /// The connection went while `work` was carried out (the engine reconnects, and the round is
    /// run again): nothing of it is lost. Work not begun is put back as it was; when steps were
    /// applied (`applied`: the end of the last), the later commits are put back and the result is
    /// read again whole — what was read after the steps (the rows of groups that entered the
    /// result) is not there.
    func lostConnection(during taken: Work, applied: UInt64?) {
        guard let applied else {
            giveBack(taken)
            return
        }
        work.putBack(taken.commits, after: applied)
        tracker.state.failed()
        if taken.replan { work.planAgain() }
    }

    /// A read failed: the query says so (once while it keeps failing) and is behind; its result
    /// held until just before `before` (a commit's end), as far as it knows.
    func fail(_ error: PostgresLiveQueryError, before: UInt64?) {
        deliveries.withLock { deliveries in deliveries.positions.failed(heldThrough: before.map { $0 - 1 }) }
        if work.failed(at: .now) {
            tracker.reportFailure(LiveQueryError(error))
        } else {
            tracker.state.failed()
        }
    }

    /// Carries out the round's action: the touched rows re-read once, then applied step by step
    /// (`CommitSteps`), or the whole result fetched again. `applied`: the end of the last step applied.
    private func carryOut(_ action: TrackingState.Action, _ commits: [AbsorbedCommit], round: UInt64, _ session: PostgresSession,
                          start: ContinuousClock.Instant, applied: inout UInt64?, prefetched: PrefetchedReads?) async throws(PostgresLiveQueryError) {
        do {
            switch action {
            case .none:
                break
            case let .reread(rows):
                let heldBefore = plan.children.isEmpty ? [] : rows.filter { tracker.index.entry(forRowid: $0) != nil }
                let reads = if let prefetched { prefetched } else { try await reread(rows, session) }
                let steps = CommitSteps.partition(commits.map { CommitSteps.Commit(end: $0.end, rows: $0.rows,
                                                                                    touchesJoinedTable: $0.touchesJoinedTable) },
                                                   refetches: false)
                let stepRows = CommitSteps.rows(of: steps, in: commits.map { CommitSteps.Commit(end: $0.end, rows: $0.rows, touchesJoinedTable: false) })
                // Rows re-read for another reason (a holder of a duplicate identity) go with the last step.
                var leftover = rows.subtracting(stepRows.reduce(into: Set<Int64>()) { $0.formUnion($1) })
                for (step, touched) in zip(steps, stepRows) {
                    let (first, last) = (commits[step.lowerBound].end, commits[step.upperBound - 1].end)
                    var these = touched
                    if step.upperBound == commits.count {
                        these.formUnion(leftover)
                        leftover = []
                    }
                    try deliver(these, reads, step: (first, last), start: start)
                    applied = last
                }
                if commits.isEmpty, !leftover.isEmpty { try deliver(leftover, reads, step: (round, round), start: start) }
                if !plan.children.isEmpty { try await settleGroups(rows, heldBefore: Set(heldBefore), session) }
                keys.forget(rows.filter { tracker.index.entry(forRowid: $0) == nil })
            case .refetch:
                var fresh = RowKeys(integerKeys: plan.integerKeys)
                let (entries, contents) = try await PostgresRows.read(plan, plan.fetchSQL, .text(plan.arguments), &fresh, session,
                                                                        keepingContents: PostgresRows.contentsKept)
                keep(contents)
                // Both read before either is kept: the keys must stay those of the index until it is replaced.
                let links = try await Self.childLinks(plan, groups: entries.compactMap { fresh.value(of: $0.rowid) }, session)
                keys = fresh
                childLinks = links
                // Following, the refetch is one step of the round's commits; after a failure (commits
                // may have been missed) the result read holds at the round's position.
                let following = deliveries.withLock { $0.positions.isFollowing }
                let standsFor: PositionedDeliveries.StandsFor
                if following, let first = commits.first?.end, let last = commits.last?.end {
                    standsFor = .step(first: first, last: last)
                } else {
                    standsFor = .read(from: round)
                }
                // A result that comes back as it was stands at the commits' position.
                try delivering(standsFor, shown: tracker.channel.latestResult.stateID) {
                    try tracker.carryOut(action, PrefetchedReads(entries: entries), start: start)
                }
                applied = following ? commits.last?.end ?? round : round
            }
        } catch let error as PostgresLiveQueryError {
            throw error
        } catch {
            throw .underlying(error)
        }
    }

    /// Applies one step's rows (their reads among `reads`; a row absent there left the result).
    private func deliver(_ rows: Set<Int64>, _ reads: PrefetchedReads, step: (first: UInt64, last: UInt64),
                         start: ContinuousClock.Instant) throws {
        // A step that leaves the result as it was: it stands again at the step's last commit.
        try delivering(.step(first: step.first, last: step.last)) { try tracker.applyTouchedRows(rows, reads, start: start) }
    }

    func abandonApply() {
        deliveries.withLock { deliveries in deliveries.positions.failed(heldThrough: deliveries.positions.pendingFrom.map { $0 - 1 }) }
        tracker.state.failed()
        work.clearFailure()
    }

    func lostTrack(_ error: PostgresLiveQueryError, heldThrough: UInt64) {
        // Commits may have been missed: nothing is known after `heldThrough` until the result is read again.
        work.forgetCommits()
        deliveries.withLock { $0.positions.pendingFrom = nil }
        deliveries.withLock { $0.positions.failed(heldThrough: heldThrough) }
        tracker.reportFailure(LiveQueryError(error))
    }

    func finish() {
        _ = tracker.state.stop()
        tracker.channel.finish()
        positioned.finish()
        finishWaiting()
    }
}
