import Testing
@testable import LiveQueryPostgres

/// Where a query opened with its first screen stands with the rest of its result, as a value,
/// without PostgreSQL: where the whole result holds from, who waits for it, and that once whole
/// nothing of the rest is left.
@Suite("First fetch state")
struct FirstFetchStateTests {
    typealias State = FirstFetchState<String, Int>

    @Test("a result read whole is whole: nobody waits, a rest that comes late is dropped")
    func wholeAtOnce() {
        var state = State(whole: true, holdsFrom: 10)
        #expect(state.isWhole)
        let queued = state.wait(1)
        #expect(!queued, "woken at once")
        state.arrived("rest")
        #expect(state.rest == nil && state.isWhole)
        state.touched(at: 20)
        #expect(state.complete().isEmpty)
    }

    @Test("the whole result holds from the first screen's position, or the last commit that touched the query meanwhile")
    func holdsFrom() {
        var state = State(whole: false, holdsFrom: 10)
        #expect(!state.isWhole && state.rest == nil)
        state.arrived("rest")
        #expect(state.rest?.rest == "rest" && state.rest?.holdsFrom == 10)
        state.touched(at: 20)
        state.touched(at: 30)
        #expect(state.rest?.holdsFrom == 30)

        var touchedEarly = State(whole: false, holdsFrom: 10)
        touchedEarly.touched(at: 25)
        touchedEarly.arrived("rest")
        #expect(touchedEarly.rest?.holdsFrom == 25, "a commit while the rest is read counts as well")
    }

    @Test("waiters are woken in order once the result is whole, and nothing of the rest is left")
    func waiters() {
        var state = State(whole: false, holdsFrom: 10)
        let first = state.wait(1)
        #expect(first)
        state.arrived("rest")
        let second = state.wait(2)
        #expect(second)
        #expect(state.complete() == [1, 2])
        #expect(state.isWhole && state.rest == nil)
        #expect(state.complete().isEmpty, "woken once")
        let late = state.wait(3)
        #expect(!late)
    }

    @Test("a query stopped while its rest is read: the waiters wake, and the rest that arrives after is dropped")
    func stoppedWhileReading() {
        var state = State(whole: false, holdsFrom: 10)
        let queued = state.wait(1)
        #expect(queued)
        #expect(state.complete() == [1])
        state.arrived("rest")
        #expect(state.rest == nil && state.isWhole)
    }
}
