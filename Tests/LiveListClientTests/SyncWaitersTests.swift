import Testing
@testable import LiveListClient

/// A list's `upToDate()` calls waiting for their answers, without I/O.
@Suite("Sync waiters")
struct SyncWaitersTests {
    @Test("each call gets the next number; an answer takes out its own call only, once")
    func answers() {
        var syncs = SyncWaiters<String>()
        let a = syncs.add("a"), b = syncs.add("b"), c = syncs.add("c")
        #expect([a, b, c] == [1, 2, 3])
        #expect(syncs.answer(b) == "b")
        #expect(syncs.answer(b) == nil, "answered already")
        #expect(syncs.answer(9) == nil, "never asked")
        #expect(syncs.ids == [1, 3], "what a new subscription asks again, in order")
    }

    @Test("a lost connection takes every call, in the order asked; numbers go on after it")
    func takeAllKeepsOrderAndNumbering() {
        var syncs = SyncWaiters<Int>()
        for value in 0..<20 { _ = syncs.add(value) }
        _ = syncs.answer(5)
        #expect(syncs.takeAll() == Array(0..<20).filter { $0 != 4 }, "call 5 holds value 4")
        #expect(syncs.isEmpty && syncs.takeAll().isEmpty)
        #expect(syncs.add(99) == 21, "a number is never used twice: a late synced for an old one finds nothing")
        #expect(syncs.answer(3) == nil)
    }
}
