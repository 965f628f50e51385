import ListDiff
import Testing
@testable import LiveListServer

/// A hub's unanswered `sync`s, decided without I/O.
@Suite("Pending syncs")
struct PendingSyncsTests {
    static let a = ListStateID(source: 1, generation: 1)
    static let b = ListStateID(source: 1, generation: 2)
    static let c = ListStateID(source: 1, generation: 3)

    @Test("an answer waits for its state to be the result or passed; answers go in the order asked")
    func waitsForItsState() {
        var syncs = PendingSyncs<String>()
        syncs.add("at b", state: Self.b, reached: false)
        syncs.add("now", state: nil, reached: false)
        syncs.add("at a, held", state: Self.a, reached: true)
        let due1 = syncs.due(at: Self.a) { _, _ in .answer }
        #expect(due1 == ["now", "at a, held"])
        let due2 = syncs.due(at: Self.a) { _, _ in .answer }
        #expect(due2 == [], "b is not reached yet")
        let due3 = syncs.due(at: Self.b) { _, _ in .answer }
        #expect(due3 == ["at b"], "the result is b")
        #expect(syncs.isEmpty)
    }

    @Test("a result that moves past a state reaches it, even when the hub is further on")
    func passedStates() {
        var syncs = PendingSyncs<String>()
        syncs.add("at b", state: Self.b, reached: false)
        syncs.passed(Self.a)
        let due4 = syncs.due(at: Self.c) { _, _ in .answer }
        #expect(due4 == [], "c is not b, and b was not passed")
        syncs.passed(Self.b)
        let due5 = syncs.due(at: Self.c) { _, _ in .answer }
        #expect(due5 == ["at b"])
    }

    @Test("a subscriber that waits keeps its answer; one that left loses it, reached or not")
    func verdicts() {
        var syncs = PendingSyncs<String>()
        syncs.add("awaiting reset", state: Self.a, reached: true)
        syncs.add("left", state: Self.c, reached: false)
        let first = syncs.due(at: Self.a) { waiter, _ in waiter == "left" ? .drop : .wait }
        #expect(first == [] && syncs.waiting.map(\.waiter) == ["awaiting reset"])
        let due6 = syncs.due(at: Self.a) { _, _ in .answer }
        #expect(due6 == ["awaiting reset"])
    }
}
