import LiveQueryCore
import PostgresNIO

/// A published query with arguments is opened once per set of arguments (`WHERE folder_id =
/// :folder`, one per folder on screen), and each commit to its table makes each of them re-read the
/// rows it touched. Those re-reads share their statement: a round reads them in one
/// (`RereadBatch`), so its cost grows with the published queries, not with their argument sets.
extension PostgresQueryRunner {
    var batchKey: String? {
        guard !isDetached, !work.needsPlan, !hasRest, !tracker.isBuilding, !tracker.state.isBehind, work.lastFailure == nil, !work.absorbed.isEmpty,
              let template = plan.rereadBatchSQL,
              let values = request.argumentValues, let kinds = RereadBatch.kinds(of: values) else { return nil }
        return kinds + "\u{0}" + template
    }

    func resolveLookups(_ session: PostgresSession, _ cache: inout RoundLookups) async throws(PostgresLiveQueryError) -> Bool {
        guard work.hasLookups else { return true }
        var commits = work.takeCommits()
        do throws(PostgresLiveQueryError) {
            try await lookUpJoinedRows(&commits, session, &cache)
        } catch {
            if error.isLostConnection || error.isTransient {
                // The commits wait for the next round, as in `apply(round:_:guarded:)`; a lookup
                // refused behind another statement's failure is not this query's.
                work.putBack(commits)
                if error.isTransient { return false }
                throw error
            }
            // As an apply whose lookups fail: the query says so, and reads its result again later.
            _ = tracker.state.committed()
            fail(error, before: commits.first?.end)
            return false
        }
        for index in commits.indices where !commits[index].lookups.isEmpty {
            commits[index].lookups = [:]
            commits[index].joinsResolved = true
        }
        work.putBack(commits)
        return true
    }

    /// The keys of `role`'s rows that `commits` changed, each with the commits (by index) that
    /// changed it: a lookup asks for them in sorted order — ahead of the round
    /// (``sendLookups(_:_:)``) and when resolved, so that both send the same statement.
    static func changedKeys(of role: Int, in commits: [AbsorbedCommit]) -> [String: [Int]] {
        var byKey: [String: [Int]] = [:]
        for (index, commit) in commits.enumerated() {
            for key in commit.lookups[role] ?? [] { byKey[key, default: []].append(index) }
        }
        return byKey
    }

    func sendLookups(_ session: PostgresSession, _ cache: inout RoundLookups) {
        // Those past the point where the tracker refetches instead are sent in vain, not wrongly.
        guard work.hasLookups, tracker.state.wantsRows else { return }
        // The keys `lookUpJoinedRows` and `lookUpGroups` ask for, in their order.
        func changed(_ role: Int) -> [String] { Self.changedKeys(of: role, in: work.absorbed).keys.sorted() }
        for lookup in plan.joins {
            let keys = changed(lookup.role)
            if !keys.isEmpty { cache.send(lookup.sql, keys: keys, session) }
        }
        for child in plan.children {
            for keys in PostgresRows.chunks(changed(child.role)) { cache.send(child.changedSQL, keys: keys, session) }
        }
    }

    func takeBatched() -> Bool {
        guard !work.hasLookups else { return false }
        let taken = takeWork(commits: work.takeCommits())
        guard case .reread = taken.action, takenWork.batch(taken) else {
            giveBack(taken)
            return false
        }
        return true
    }

    var batchedRows: Int {
        guard case let .reread(rows) = takenWork.batched?.action else { return 0 }
        return rows.count
    }

    var batchRow: (arguments: [SQLValue], identities: [String]) {
        guard case let .reread(rows) = takenWork.batched?.action else { return (request.argumentValues ?? [], []) }
        return (request.argumentValues ?? [], rows.compactMap { keys.value(of: $0) }.map(Self.text(of:)))
    }

    func giveBackBatched() {
        if let taken = takenWork.takeBatched() { giveBack(taken) }
    }

    func finishBatched(_ rows: [ReadRow], round: UInt64, _ session: PostgresSession) async throws(PostgresLiveQueryError) -> Bool {
        guard let taken = takenWork.takeBatched() else { return true }
        defer { deliveries.withLock { $0.positions.pendingFrom = work.pendingFrom } }
        let reads = PrefetchedReads(entries: PostgresRows.entries(rows, plan, &keys))
        if rows.count <= PostgresRows.contentsKept { keep(rows) }
        return try await finishApply(taken, round: round, session, guarded: false, start: .now, prefetched: reads)
    }

    /// Puts back work taken and not carried out (its round ended first): its commits wait for the
    /// next round, and the tracker's decision is made again then.
    func giveBack(_ taken: Work) {
        work.putBack(taken.commits)
        switch taken.action {
        case let .reread(rows): for row in rows.sorted() { _ = tracker.state.touched(row) }
        case let .refetch(reason): tracker.state.needsRefetch(reason)
        case .none: break
        }
        if taken.replan { work.planAgain() }
    }
}
