import Testing
@testable import LiveQueryPostgres

/// Where the refetch lanes stand, as a value, without PostgreSQL: a lane is taken only while free,
/// for queries no lane has; what a query read apart is told waits for its lane to hand it back, in
/// order, and only for it; a query no lane has is told at once; a lane that finishes is free again
/// and gives back whatever it had not handed back. Once closed (the runner shut down), no lane is
/// taken again, and a lane reading then still holds for its queries until it hands them back.
@Suite("Lane state")
struct LaneStateTests {
    /// A stand-in for a query: only its identity matters.
    final class Query {
        let name: String
        init(_ name: String) { self.name = name }
        var id: ObjectIdentifier { ObjectIdentifier(self) }
    }

    typealias State = LaneState<Query, String>

    static func entries(_ queries: Query...) -> [(id: ObjectIdentifier, query: Query)] { queries.map { ($0.id, $0) } }

    @Test("a lane taken is busy until its read finishes, then free again")
    func takeAndFinish() {
        var state = State(count: 2)
        let a = Query("a"), b = Query("b")
        #expect(state.free == [0, 1] && !state.allBusy)
        let took = state.take(1, for: Self.entries(a))
        #expect(took)
        #expect(state.free == [0] && !state.allBusy)
        #expect(state.lane(of: a.id) == 1 && state.lane(of: b.id) == nil)
        let tookOther = state.take(0, for: Self.entries(b))
        #expect(tookOther)
        #expect(state.free.isEmpty && state.allBusy, "every lane reads: refetched queries wait")
        let handed = state.handBack(a.id)
        #expect(handed == [])
        #expect(state.free.isEmpty, "lane 1 handed back every query; it stays taken until its transaction ends")
        let left = state.finished(1)
        #expect(left?.isEmpty == true)
        #expect(state.free == [1] && !state.allBusy)
        let again = state.finished(1)
        #expect(again == nil, "a free lane does not finish")
    }

    @Test("a lane is not taken twice, nor for nothing, nor past the lanes there are")
    func busyLaneRefused() {
        var state = State(count: 1)
        let a = Query("a"), b = Query("b")
        let none = state.take(0, for: [])
        #expect(!none, "a lane reads something")
        let outside = state.take(1, for: Self.entries(a))
        #expect(!outside)
        #expect(state.free == [0])
        let took = state.take(0, for: Self.entries(a))
        #expect(took)
        let twice = state.take(0, for: Self.entries(b))
        #expect(!twice, "the lane reads already")
        #expect(state.lane(of: b.id) == nil, "refused: b stays with the rounds")
        #expect(state.lane(of: a.id) == 0)
    }

    @Test("a query is on one lane at most")
    func queryOnOneLane() {
        var state = State(count: 2)
        let a = Query("a"), b = Query("b")
        let duplicated = state.take(0, for: Self.entries(a, a))
        #expect(!duplicated)
        #expect(state.free == [0, 1], "refused whole")
        let took = state.take(0, for: Self.entries(a))
        #expect(took)
        let again = state.take(1, for: Self.entries(b, a))
        #expect(!again, "a is read apart on lane 0 already")
        #expect(state.free == [1] && state.lane(of: b.id) == nil)
    }

    @Test("what a query read apart is told waits for its lane to hand it back, in order, and only for it")
    func heldUntilHandedBack() {
        var state = State(count: 1)
        let a = Query("a"), b = Query("b"), other = Query("other")
        let took = state.take(0, for: Self.entries(a, b))
        #expect(took)
        #expect(state.hold("commit 1", for: a.id) == .held)
        #expect(state.hold("commit 2", for: b.id) == .held)
        #expect(state.hold("lost track", for: a.id) == .held)
        #expect(state.hold("finish", for: a.id) == .held)
        #expect(state.hold("commit 3", for: other.id) == .tell("commit 3"), "no lane has it: told at once")
        let handedA = state.handBack(a.id)
        #expect(handedA == ["commit 1", "lost track", "finish"])
        #expect(state.hold("commit 4", for: a.id) == .tell("commit 4"), "handed back: told at once again")
        #expect(state.hold("commit 5", for: b.id) == .held, "b is still read apart")
        let handedB = state.handBack(b.id)
        #expect(handedB == ["commit 2", "commit 5"])
        let handedTwice = state.handBack(b.id)
        #expect(handedTwice == nil, "handed back once")
        let never = state.handBack(other.id)
        #expect(never == nil, "no lane had it")
    }

    @Test("a lane that finishes without handing a query back gives it back with what was held for it")
    func finishedGivesBackTheRest() {
        var state = State(count: 1)
        let a = Query("a"), b = Query("b")
        let took = state.take(0, for: Self.entries(a, b))
        #expect(took)
        #expect(state.hold("commit 1", for: b.id) == .held)
        _ = state.handBack(a.id)
        let left = state.finished(0) ?? []
        #expect(left.map(\.query.name) == ["b"])
        #expect(left.first?.held == ["commit 1"])
        #expect(state.lane(of: b.id) == nil)
        #expect(state.hold("commit 2", for: b.id) == .tell("commit 2"), "its lane is gone: told at once")
        let retaken = state.take(0, for: Self.entries(b))
        #expect(retaken, "free for the next round")
    }

    /// The interleaving this guards: a round awaits a lane's BEGIN; the runner shuts down meanwhile
    /// and tells the queries to finish; the round then takes the lane. Refused, the queries are
    /// never read apart after their finish.
    @Test("closed, no lane is taken again; one reading then holds for its queries until it hands them back")
    func closedTakesNothing() {
        var state = State(count: 2)
        let a = Query("a"), b = Query("b")
        let took = state.take(0, for: Self.entries(a))
        #expect(took)
        state.close()
        #expect(state.isClosed)
        #expect(state.free.isEmpty && state.allBusy, "no round detaches once shut down")
        let late = state.take(1, for: Self.entries(b))
        #expect(!late, "a round that began lane 1's transaction before the shutdown leaves b alone")
        #expect(state.lane(of: b.id) == nil)
        #expect(state.hold("finish", for: b.id) == .tell("finish"), "no lane has b: told at once")
        #expect(state.hold("finish", for: a.id) == .held, "lane 0 still reads a")
        let handed = state.handBack(a.id)
        #expect(handed == ["finish"])
        let left = state.finished(0)
        #expect(left?.isEmpty == true)
        #expect(state.free.isEmpty, "lane 0 finished, and is not taken again")
        let retaken = state.take(0, for: Self.entries(a))
        #expect(!retaken)
    }
}
