import ListDiff
@testable import LiveQueryPostgres
import Testing

/// The decisions of a round, without a database: which decoded commits its snapshot lets it
/// apply, and which commit positions each delivered result holds at.
@Suite struct RoundDecisionTests {
    static func commit(_ xid: UInt32, ending end: UInt64) -> _DecodedCommit {
        _DecodedCommit(xid: xid, commitLSN: PostgresLSN(end - 8), endLSN: PostgresLSN(end))
    }

    @Test("a round applies the commits its snapshot sees, up to the first it does not; a later one seen before an earlier one is a retry")
    func selection() throws {
        let commits = [Self.commit(10, ending: 100), Self.commit(11, ending: 200), Self.commit(12, ending: 300)]
        #expect(_RoundSelection.select(commits, seenBy: try #require(_PgSnapshot("10:13:"))) == .apply(count: 3, reachedUnseen: false))
        // 12 is at xmax: it started after the snapshot; 11 was still running.
        #expect(_RoundSelection.select(commits, seenBy: try #require(_PgSnapshot("10:12:11"))) == .apply(count: 1, reachedUnseen: true))
        // 12 became visible before 11, which committed first: the snapshot shows a state that never was.
        #expect(_RoundSelection.select(commits, seenBy: try #require(_PgSnapshot("10:13:11"))) == .retry)
        #expect(_RoundSelection.select(commits, seenBy: try #require(_PgSnapshot("10:13:10"))) == .retry)
        #expect(_RoundSelection.select(commits, seenBy: try #require(_PgSnapshot("5:10:"))) == .apply(count: 0, reachedUnseen: true))
        #expect(_RoundSelection.select([], seenBy: try #require(_PgSnapshot("5:10:"))) == .apply(count: 0, reachedUnseen: false))
    }

    static let a = ListStateID(source: 7, generation: 1)
    static let b = ListStateID(source: 7, generation: 2)
    static let c = ListStateID(source: 7, generation: 3)

    @Test("a result holds at its position and on through commits that do not touch the query, up to the first that does")
    func untouchedCommitsExtend() {
        var versions = _StateVersions()
        versions.started(Self.a, at: 100)
        versions.committed(at: 110, touching: false)
        #expect(versions.holds(Self.a, at: 100) && versions.holds(Self.a, at: 105) && versions.holds(Self.a, at: 110))
        #expect(!versions.holds(Self.a, at: 99) && !versions.holds(Self.a, at: 111))
        versions.committed(at: 130, touching: true)
        versions.committed(at: 140, touching: false)
        versions.applying(at: 140, replacing: nil)
        versions.settled(Self.b, at: 140)
        // Through the last position before the touching commit, and not from it on.
        #expect(versions.holds(Self.a, at: 129) && !versions.holds(Self.a, at: 130) && !versions.holds(Self.a, at: 140))
        #expect(versions.holds(Self.b, at: 140) && !versions.holds(Self.b, at: 139))
        #expect(versions.position(of: Self.a) == 100 && versions.position(of: Self.b) == 140)
        versions.committed(at: 150, touching: false)
        #expect(versions.holds(Self.b, at: 150))
    }

    @Test("a round that touches the query and leaves its result unchanged: the result holds again from the round's position, not inside it")
    func unchangedResult() {
        var versions = _StateVersions()
        versions.started(Self.a, at: 100)
        // Two commits in one round: the first could change the list, the second change it back.
        versions.committed(at: 110, touching: true)
        versions.committed(at: 120, touching: true)
        versions.applying(at: 120, replacing: nil)
        versions.settled(Self.a, at: 120)
        #expect(versions.holds(Self.a, at: 109))
        #expect(!versions.holds(Self.a, at: 110) && !versions.holds(Self.a, at: 115))
        #expect(versions.holds(Self.a, at: 120))
        versions.committed(at: 125, touching: false)
        #expect(versions.holds(Self.a, at: 125))
        #expect(versions.position(of: Self.a) == 100)
    }

    @Test("after a failure nothing is known until a round succeeds")
    func failures() {
        var versions = _StateVersions()
        versions.started(Self.a, at: 100)
        versions.committed(at: 110, touching: false)
        versions.failed()
        versions.committed(at: 120, touching: false)
        #expect(versions.holds(Self.a, at: 110) && !versions.holds(Self.a, at: 120))
        versions.applying(at: 130, replacing: nil)
        versions.settled(Self.a, at: 130)
        #expect(versions.holds(Self.a, at: 130) && !versions.holds(Self.a, at: 125))
    }

    @Test("a result delivered by the round being applied has the round's position before the round records it")
    func inFlight() {
        var versions = _StateVersions()
        versions.started(Self.a, at: 100)
        versions.committed(at: 110, touching: true)
        versions.applying(at: 110, replacing: Self.a)
        #expect(versions.position(of: Self.b) == 110)
        #expect(versions.position(of: Self.a) == 100)
        #expect(versions.position(of: ListStateID(source: 8, generation: 9)) == nil)
        versions.settled(Self.b, at: 110)
        #expect(versions.position(of: Self.b) == 110)
        #expect(versions.position(of: Self.c) == nil)
    }

    @Test("the whole result of a query that opened with a first screen has the round's position while the round is applied; the first screen has none")
    func inFlightFirstWhole() {
        var versions = _StateVersions()
        versions.committed(at: 110, touching: true)
        // The first screen (a) is being replaced by the whole result (b): only b is in flight.
        versions.applying(at: 110, replacing: Self.a)
        #expect(versions.position(of: Self.a) == nil)
        #expect(versions.position(of: Self.b) == 110)
        versions.settled(Self.b, at: 110)
        #expect(versions.position(of: Self.b) == 110 && versions.holds(Self.b, at: 110))
    }

    @Test("only the newest results are remembered")
    func capacity() {
        var versions = _StateVersions(capacity: 2)
        for generation in 1...5 {
            versions.committed(at: UInt64(generation * 10 - 5), touching: true)
            versions.applying(at: UInt64(generation * 10), replacing: nil)
            versions.settled(ListStateID(source: 1, generation: UInt64(generation)), at: UInt64(generation * 10))
        }
        #expect(versions.position(of: ListStateID(source: 1, generation: 3)) == nil)
        #expect(versions.position(of: ListStateID(source: 1, generation: 4)) == 40)
        #expect(versions.position(of: ListStateID(source: 1, generation: 5)) == 50)
        #expect(versions.holds(ListStateID(source: 1, generation: 4), at: 44))
        #expect(!versions.holds(ListStateID(source: 1, generation: 4), at: 45))
    }
}
