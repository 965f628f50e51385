@testable import LiveListServer
import Testing

/// The mutation scheduler's decisions, without a task or a socket: connections take turns for the
/// engine, one mutation each, however many each has queued.
@Suite("Mutation schedule")
struct MutationScheduleStateTests {
    typealias State = MutationScheduleState<String>

    /// Runs every started mutation through the engine and its answer, in the order started, until
    /// none is left: the connections in the order their mutations reached the engine.
    static func drain(_ state: inout State, started: [State.Action]) -> [String] {
        var order: [String] = []
        var pending = started
        while !pending.isEmpty {
            guard case let .start(connection) = pending.removeFirst() else { continue }
            order.append(connection)
            pending += state.leftEngine(connection)
            pending += state.answered(connection)
        }
        return order
    }

    @Test("while A has 100 queued, B's one mutation reaches the engine after at most one of A's")
    func bystanderWaitsForOne() {
        var state = State(slots: 1)
        var started: [State.Action] = []
        for _ in 0..<100 { started += state.enqueue("A", limit: 256).actions }
        #expect(started == [.start("A")], "the first of A's starts at once; the rest wait")
        let (queued, actions) = state.enqueue("B", limit: 256)
        #expect(queued)
        #expect(actions.isEmpty, "the slot is A's")
        // A's first leaves the engine: the slot goes to B, not to A's second.
        #expect(state.leftEngine("A") == [.start("B")])
        #expect(state.answered("A").isEmpty, "A's second waits behind B")
        #expect(state.leftEngine("B") == [.start("A")])
        #expect(state.answered("B").isEmpty)
        #expect(state.lanes["B"] == nil, "B has nothing left")
        #expect(Self.drain(&state, started: state.leftEngine("A") + state.answered("A")) == Array(repeating: "A", count: 98))
        #expect(state.lanes.isEmpty && state.turns.isEmpty && state.running == 0)
    }

    @Test("three connections with full queues are served round-robin")
    func roundRobin() {
        var state = State(slots: 1)
        var started: [State.Action] = []
        for connection in ["A", "B", "C"] {
            for _ in 0..<4 { started += state.enqueue(connection, limit: 256).actions }
        }
        #expect(Self.drain(&state, started: started) == ["A", "B", "C", "A", "B", "C", "A", "B", "C", "A", "B", "C"])
    }

    @Test("a connection's next waits for its last to be answered, but the slot goes on meanwhile")
    func answerHoldsTheLaneNotTheSlot() {
        var state = State(slots: 1)
        #expect(state.enqueue("A", limit: 256).actions == [.start("A")])
        #expect(state.enqueue("A", limit: 256).actions.isEmpty)
        #expect(state.leftEngine("A").isEmpty, "A's second waits for the first's answer")
        #expect(state.running == 0)
        #expect(state.enqueue("B", limit: 256).actions == [.start("B")], "the free slot serves B while A's answer is made")
        #expect(state.answered("A").isEmpty, "the slot is B's")
        #expect(state.leftEngine("B") == [.start("A")])
    }

    @Test("slots: at most that many with the engine at once, still one per connection")
    func slots() {
        var state = State(slots: 2)
        var started: [State.Action] = []
        for _ in 0..<3 { started += state.enqueue("A", limit: 256).actions }
        #expect(started == [.start("A")], "a connection's own run one at a time")
        #expect(state.enqueue("B", limit: 256).actions == [.start("B")])
        #expect(state.enqueue("C", limit: 256).actions.isEmpty, "two slots, both taken")
        #expect(state.running == 2)
        #expect(state.leftEngine("A") == [.start("C")])
    }

    @Test("the per-connection limit counts the mutations queued, not the one running; another connection is not affected")
    func limit() {
        var state = State(slots: 1)
        #expect(state.enqueue("A", limit: 2).queued)
        #expect(state.enqueue("A", limit: 2).queued)
        #expect(state.enqueue("A", limit: 2).queued)
        #expect(!state.enqueue("A", limit: 2).queued, "two wait behind the running one")
        #expect(state.enqueue("B", limit: 2).queued)
        _ = state.leftEngine("A")
        _ = state.answered("A")
        #expect(!state.enqueue("A", limit: 2).queued, "one started, one more queued: two wait again")
    }

    @Test("a closed connection's queued mutations are dropped; the one running ends and frees its slot")
    func close() {
        var state = State(slots: 1)
        for _ in 0..<5 { _ = state.enqueue("A", limit: 256) }
        _ = state.enqueue("B", limit: 256)
        #expect(state.close("A") == 4)
        #expect(!state.enqueue("A", limit: 256).queued, "closed")
        #expect(state.leftEngine("A") == [.start("B")])
        #expect(state.answered("A").isEmpty)
        #expect(state.lanes["A"] == nil)
        // A waiting connection that closes leaves its turn.
        _ = state.enqueue("C", limit: 256)
        #expect(state.close("C") == 1)
        #expect(state.leftEngine("B").isEmpty)
        #expect(state.answered("B").isEmpty)
        #expect(state.lanes.isEmpty && state.turns.isEmpty && state.running == 0)
    }

    @Test("a work that ends without leaving the engine first frees its slot at its answer")
    func answeredWhileRunning() {
        var state = State(slots: 1)
        _ = state.enqueue("A", limit: 256)
        _ = state.enqueue("A", limit: 256)
        _ = state.enqueue("B", limit: 256)
        #expect(state.answered("A") == [.start("B")])
        #expect(state.running == 1)
    }
}
