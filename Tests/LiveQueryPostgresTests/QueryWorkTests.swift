import Testing
@testable import LiveQueryPostgres

/// What one PostgreSQL query has left to do — commits, a plan, a failure — as a value, without
/// PostgreSQL: above all, that no commit taken for an apply is lost when the apply cannot finish.
@Suite("Query work")
struct QueryWorkTests {
    static func commit(_ end: UInt64, lookups: Bool = false) -> AbsorbedCommit {
        AbsorbedCommit(end: end, rows: [Int64(end)], lookups: lookups ? [1: ["k"]] : [:])
    }

    @Test("commits put back go before those absorbed since, in commit order; after some steps applied, only the later ones")
    func putBackKeepsOrder() {
        var work = QueryWork()
        work.absorb(Self.commit(10), reshaped: false)
        work.absorb(Self.commit(20, lookups: true), reshaped: false)
        #expect(work.hasLookups && work.pendingFrom == 10)
        let taken = work.takeCommits()
        #expect(work.absorbed.isEmpty && work.pendingFrom == nil)
        work.absorb(Self.commit(30), reshaped: false)
        work.putBack(taken)
        #expect(work.absorbed.map(\.end) == [10, 20, 30])
        let again = work.takeCommits()
        work.putBack(again, after: 20)
        #expect(work.absorbed.map(\.end) == [30], "the steps through 20 were applied")
        work.forgetCommits()
        #expect(work.absorbed.isEmpty)
    }

    @Test("a reshaped table plans again once taken, and again when the apply that would have planned did not get to")
    func replan() {
        var work = QueryWork()
        work.absorb(Self.commit(10), reshaped: true)
        var replan = work.takeReplan()
        #expect(replan && !work.needsPlan)
        replan = work.takeReplan()
        #expect(!replan)
        work.planAgain()
        #expect(work.needsRound(isBehind: false, hasRest: false, at: .now), "a plan to make is work")
    }

    @Test("the first failure of a run is told, repeats are not; a behind query retries once a second; a success ends the run")
    func failures() {
        var work = QueryWork()
        let start = ContinuousClock.now
        #expect(!work.needsRound(isBehind: false, hasRest: false, at: start))
        #expect(work.needsRound(isBehind: true, hasRest: false, at: start), "behind, never failed: at once")
        #expect(work.needsRound(isBehind: false, hasRest: true, at: start), "the rest of the first fetch")
        var first = work.failed(at: start)
        #expect(first)
        first = work.failed(at: start + .milliseconds(10))
        #expect(!first, "a repeat")
        #expect(!work.needsRound(isBehind: true, hasRest: false, at: start + .milliseconds(500)))
        #expect(work.recoveryWaits(at: start + .milliseconds(500)))
        #expect(work.needsRound(isBehind: true, hasRest: false, at: start + .milliseconds(1_010)))
        #expect(!work.recoveryWaits(at: start + .milliseconds(1_010)))
        work.clearFailure()
        first = work.failed(at: start + .seconds(2))
        #expect(first, "a new run")
    }
}
