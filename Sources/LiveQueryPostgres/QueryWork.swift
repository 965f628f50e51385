/// What one PostgreSQL query has left to do, as a value: the commits it absorbed and has not
/// applied (in commit order), whether its plan is to be made again, and when its last apply
/// failed. Events in — a commit absorbed, commits taken for an apply and put back when the apply
/// could not finish, a failure, a success — and decisions out: whether the query needs a round,
/// whether a failure is the first of a run (told) or a repeat (not), whether a recovery waits. No
/// I/O: `PostgresQueryRunner` holds it on the engine actor and carries the decisions out.
struct QueryWork {
    /// A query that keeps failing (its filter divides by zero on a new row, a column it sorts by
    /// was dropped) tries again after this, not every round.
    static let retryInterval: Duration = .seconds(1)

    /// The commits absorbed since the last apply took them, in commit order.
    private(set) var absorbed: [AbsorbedCommit] = []
    /// Whether a table's shape changed since the plan was made: the next apply plans again.
    private(set) var needsPlan = false
    /// When the last apply failed; `nil` once one succeeds.
    private(set) var lastFailure: ContinuousClock.Instant?

    /// The end of the first commit not applied yet.
    var pendingFrom: UInt64? { absorbed.first?.end }

    /// Whether some absorbed commit changed joined rows whose base rows are still to be found.
    var hasLookups: Bool { absorbed.contains { !$0.lookups.isEmpty } }

    /// Whether the query has work for a round: commits, a plan to make, the rest of its first fetch
    /// (`hasRest`), or a result that is behind (`isBehind`) — retried once a ``retryInterval``
    /// after a failure.
    func needsRound(isBehind: Bool, hasRest: Bool, at now: ContinuousClock.Instant) -> Bool {
        if !absorbed.isEmpty || needsPlan || hasRest { return true }
        guard isBehind else { return false }
        return lastFailure.map { $0.duration(to: now) >= Self.retryInterval } ?? true
    }

    /// A commit touched the query's tables; `reshaped`: it changed the shape of one of them.
    mutating func absorb(_ commit: AbsorbedCommit, reshaped: Bool) {
        if reshaped { needsPlan = true }
        absorbed.append(commit)
    }

    /// Takes every absorbed commit for an apply.
    mutating func takeCommits() -> [AbsorbedCommit] {
        defer { absorbed = [] }
        return absorbed
    }

    /// Puts back commits taken and not applied: they go before those absorbed since, and the next
    /// round applies them.
    mutating func putBack(_ commits: [AbsorbedCommit]) {
        absorbed = commits + absorbed
    }

    /// Puts back the commits taken that end after `applied` (the end of the last step applied).
    mutating func putBack(_ commits: [AbsorbedCommit], after applied: UInt64) {
        putBack(commits.filter { $0.end > applied })
    }

    /// Forgets the absorbed commits: commits may have been missed, and the result is read again.
    mutating func forgetCommits() {
        absorbed = []
    }

    /// Takes the need to plan again, for an apply.
    mutating func takeReplan() -> Bool {
        defer { needsPlan = false }
        return needsPlan
    }

    /// The plan is to be made again (an apply that would have made it did not get to).
    mutating func planAgain() {
        needsPlan = true
    }

    /// An apply failed at `now`: `true` when it is the first of a run of failures (the query says
    /// so), `false` for a repeat (it stays behind without saying it again).
    mutating func failed(at now: ContinuousClock.Instant) -> Bool {
        defer { lastFailure = now }
        return lastFailure == nil
    }

    /// An apply went through (or was given up): the run of failures is over.
    mutating func clearFailure() {
        lastFailure = nil
    }

    /// Whether a recovery (a refetch after a failure) waits: the last failure was less than a
    /// ``retryInterval`` before `start`.
    func recoveryWaits(at start: ContinuousClock.Instant) -> Bool {
        lastFailure.map { $0.duration(to: start) < Self.retryInterval } ?? false
    }
}
