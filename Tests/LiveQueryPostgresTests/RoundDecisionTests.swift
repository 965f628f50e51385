import ListDiff
@testable import LiveQueryPostgres
import Testing

/// The decisions of a round, without a database: which commits its snapshot lets it apply, which
/// commit positions each delivered result holds at, where a query that opens holds from.
@Suite struct RoundDecisionTests {
    static func commit(_ xid: UInt32, ending end: UInt64) -> DecodedCommit {
        DecodedCommit(xid: xid, commitLSN: PostgresLSN(end - 8), endLSN: PostgresLSN(end))
    }

    @Test("a round applies the commits its snapshot sees, up to the first it does not; a later one seen before an earlier one is a retry")
    func selection() throws {
        let commits = [Self.commit(10, ending: 100), Self.commit(11, ending: 200), Self.commit(12, ending: 300)]
        #expect(RoundSelection.select(commits, seenBy: try #require(PostgresSnapshot("10:13:"))) == .apply(count: 3, reachedUnseen: false))
        // 12 is at xmax: it started after the snapshot; 11 was still running.
        #expect(RoundSelection.select(commits, seenBy: try #require(PostgresSnapshot("10:12:11"))) == .apply(count: 1, reachedUnseen: true))
        // 12 became visible before 11, which committed first: the snapshot shows a state that never was.
        #expect(RoundSelection.select(commits, seenBy: try #require(PostgresSnapshot("10:13:11"))) == .retry)
        #expect(RoundSelection.select(commits, seenBy: try #require(PostgresSnapshot("10:13:10"))) == .retry)
        #expect(RoundSelection.select(commits, seenBy: try #require(PostgresSnapshot("5:10:"))) == .apply(count: 0, reachedUnseen: true))
        #expect(RoundSelection.select([], seenBy: try #require(PostgresSnapshot("5:10:"))) == .apply(count: 0, reachedUnseen: false))
    }

    @Test("a commit that ends past the snapshot's insert position, unseen, stops the round: it is the next round's; one the snapshot sees is taken wherever it ends")
    func stopsAtNeeded() throws {
        let snapshot = try #require(PostgresSnapshot("10:13:"))
        #expect(RoundSelection.decide(end: PostgresLSN(301), xid: 13, seenBy: snapshot, needed: PostgresLSN(300), afterUnseen: false) == .stop)
        #expect(RoundSelection.decide(end: PostgresLSN(301), xid: 12, seenBy: snapshot, needed: PostgresLSN(300), afterUnseen: false) == .take)
        #expect(RoundSelection.decide(end: PostgresLSN(301), xid: 12, seenBy: snapshot, needed: PostgresLSN(300), afterUnseen: true) == .retry)
        #expect(RoundSelection.decide(end: PostgresLSN(300), xid: 12, seenBy: snapshot, needed: PostgresLSN(300), afterUnseen: false) == .take)
        #expect(RoundSelection.decide(end: PostgresLSN(300), xid: 12, seenBy: snapshot, needed: PostgresLSN(300), afterUnseen: true) == .retry)
        #expect(RoundSelection.decide(end: PostgresLSN(300), xid: 13, seenBy: snapshot, needed: PostgresLSN(300), afterUnseen: false) == .holdBack)
    }

    static let a = ListStateID(source: 7, generation: 1)
    static let b = ListStateID(source: 7, generation: 2)
    static let c = ListStateID(source: 7, generation: 3)

    @Test("a result holds from its position through the followed position, until a step starts with a commit touching the query")
    func followedPositionExtends() {
        var positions = ResultPositions()
        positions.read(Self.a, from: 100)
        #expect(positions.holds(Self.a, at: 100, followed: 110) && positions.holds(Self.a, at: 110, followed: 110))
        #expect(!positions.holds(Self.a, at: 99, followed: 110) && !positions.holds(Self.a, at: 111, followed: 110))
        // The followed position moves on: so does the result's interval.
        #expect(positions.holds(Self.a, at: 125, followed: 140))
        positions.stepped(to: Self.b, first: 130, last: 130)
        // Through the last position before the step's first commit, and not from it on.
        #expect(positions.holds(Self.a, at: 129, followed: 140) && !positions.holds(Self.a, at: 130, followed: 140))
        #expect(positions.holds(Self.b, at: 130, followed: 140) && positions.holds(Self.b, at: 140, followed: 140))
        #expect(!positions.holds(Self.b, at: 129, followed: 140))
        #expect(positions.position(of: Self.a) == 100 && positions.position(of: Self.b) == 130 && positions.latest == 130)
    }

    @Test("a step of several commits that leaves the result unchanged: the result holds again from its last commit, not inside it")
    func unchangedStep() {
        var positions = ResultPositions()
        positions.read(Self.a, from: 100)
        // Two commits in one step: the first could change the list, the second change it back.
        positions.stepped(to: Self.a, first: 110, last: 120)
        #expect(positions.holds(Self.a, at: 109, followed: 130))
        #expect(!positions.holds(Self.a, at: 110, followed: 130) && !positions.holds(Self.a, at: 115, followed: 130))
        #expect(positions.holds(Self.a, at: 120, followed: 130) && positions.holds(Self.a, at: 125, followed: 130))
        #expect(positions.position(of: Self.a) == 100 && positions.latest == 120)
    }

    @Test("after a failure the result holds only where it was known to; nothing is known until it is read again")
    func failures() {
        var positions = ResultPositions()
        positions.read(Self.a, from: 100)
        positions.failed(heldThrough: 110)
        #expect(!positions.isFollowing)
        #expect(positions.holds(Self.a, at: 110, followed: 200) && !positions.holds(Self.a, at: 120, followed: 200))
        positions.read(Self.b, from: 130)
        #expect(positions.holds(Self.b, at: 130, followed: 130) && !positions.holds(Self.b, at: 125, followed: 130))
        positions.failed(heldThrough: nil)
        #expect(!positions.holds(Self.b, at: 130, followed: 200))
    }

    @Test("only the newest results are remembered")
    func capacity() {
        var positions = ResultPositions(capacity: 2)
        for generation in 1...5 {
            positions.stepped(to: ListStateID(source: 1, generation: UInt64(generation)), first: UInt64(generation * 10), last: UInt64(generation * 10))
        }
        #expect(positions.position(of: ListStateID(source: 1, generation: 3)) == nil)
        #expect(positions.position(of: ListStateID(source: 1, generation: 4)) == 40)
        #expect(positions.position(of: ListStateID(source: 1, generation: 5)) == 50)
        #expect(positions.holds(ListStateID(source: 1, generation: 4), at: 49, followed: 60))
        #expect(!positions.holds(ListStateID(source: 1, generation: 4), at: 50, followed: 60))
    }

    @Test("a query that opens holds from the last commit that touched its tables, or from where the log begins")
    func commitLog() {
        var log = CommitLog(capacity: 3)
        log.restart(at: 50)
        #expect(log.lastTouch(of: [1], atOrBefore: 80) == 50)
        log.append(end: 60, relations: [1])
        log.append(end: 70, relations: [2])
        #expect(log.lastTouch(of: [1], atOrBefore: 80) == 60)
        #expect(log.lastTouch(of: [2], atOrBefore: 65) == 50)
        #expect(log.lastTouch(of: [3], atOrBefore: 80) == 50)
        log.append(end: 80, relations: [2])
        log.append(end: 90, relations: [2])
        // The commit at 60 was forgotten: the log is complete from its end on.
        #expect(log.coveredFrom == 60)
        #expect(log.lastTouch(of: [1], atOrBefore: 95) == 60)
        #expect(log.lastTouch(of: [2], atOrBefore: 85) == 80)
    }

    @Test("the last record ends where the insert position is, but at a page's start when the next record would start the page")
    func lastRecordEnd() {
        let page: UInt64 = 8_192, segment: UInt64 = 16 << 20
        func end(_ insert: UInt64) -> UInt64 { PostgresDatabaseRunner.lastRecordEnd(insert: PostgresLSN(insert), pageSize: page, segmentSize: segment).value }
        // Just past a page's header: the short one, and the long one on a segment's first page.
        #expect(end(3 * page + 24) == 3 * page)
        #expect(end(5 * segment + 40) == 5 * segment)
        // A record that ran over from the page before ends after the header: 40 bytes into a page
        // that is not a segment's first is 16 bytes of such a record (seen on a live server).
        #expect(end(4 * page + 40) == 4 * page + 40)
        #expect(end(5 * segment + 24) == 5 * segment + 24)
        #expect(end(3 * page + 32) == 3 * page + 32)
        #expect(end(3 * page + 16) == 3 * page + 16)
        #expect(end(3 * page + 500) == 3 * page + 500)
    }
}
