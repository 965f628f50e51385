import Testing
@testable import LiveQueryPostgres

/// Where the work a query's apply took is held, as a value, without PostgreSQL: taken once, given
/// back or carried out once, never in a batch while the query is read apart.
@Suite("Taken work")
struct TakenWorkTests {
    @Test("work taken for a batch is held once and taken once")
    func batched() {
        var taken = TakenWork<Int>.none
        #expect(taken.batched == nil && !taken.isDetached)
        let held = taken.batch(1)
        #expect(held)
        #expect(taken.batched == 1)
        let heldAgain = taken.batch(2)
        #expect(!heldAgain, "work is held already: the second is given back")
        #expect(taken.batched == 1)
        #expect(taken.takeBatched() == 1)
        #expect(taken.takeBatched() == nil, "taken once")
        #expect(taken.batched == nil)
    }

    @Test("a query read apart is in no batch; its work is taken once; handed back, the rounds apply it again")
    func detached() {
        var taken = TakenWork<Int>.none
        taken.detach(1)
        #expect(taken.isDetached && taken.detached == 1)
        let batchedApart = taken.batch(2)
        #expect(!batchedApart, "read apart: not batched")
        #expect(taken.takeBatched() == nil)
        #expect(taken.takeDetached() == 1)
        #expect(taken.isDetached, "still read apart until handed back")
        #expect(taken.takeDetached() == nil, "taken once")
        taken.handBack()
        #expect(!taken.isDetached && taken.detached == nil)
        let batchedAfter = taken.batch(3)
        #expect(batchedAfter)
    }

    @Test("work a lane did not apply goes when it hands the query back")
    func handedBackUnapplied() {
        var taken = TakenWork<Int>.none
        taken.detach(1)
        taken.handBack()
        #expect(!taken.isDetached && taken.detached == nil && taken.takeDetached() == nil)
        taken.handBack()
        #expect(!taken.isDetached)
    }
}
