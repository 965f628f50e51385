import Testing
@testable import LiveQueryPostgres

/// Where the database runner stands, as a value, without PostgreSQL: one turn at a time, handed
/// on first come first; connections kept only while open; a close that refuses every waiter and
/// hands back every connection.
@Suite("Database runner state")
struct DatabaseRunnerStateTests {
    typealias State = DatabaseRunnerState<String, Int>

    @Test("the turn is handed on to the waiters in the order they came, then is free")
    func turnsInOrder() {
        var state = State()
        #expect(state.enter() == .granted)
        #expect(state.enter() == .mustWait)
        let first = state.wait(1)
        #expect(first == nil, "queued")
        let second = state.wait(2)
        #expect(second == nil)
        let handedToFirst = state.leave()
        #expect(handedToFirst == 1)
        #expect(state.enter() == .mustWait, "1 holds it now: a newcomer waits behind 2")
        let third = state.wait(3)
        #expect(third == nil)
        let handedToSecond = state.leave()
        #expect(handedToSecond == 2)
        let handedToThird = state.leave()
        #expect(handedToThird == 3)
        let nobody = state.leave()
        #expect(nobody == nil)
        #expect(state.enter() == .granted, "free again")
    }

    @Test("a caller told to wait after the turn was let go takes it at once")
    func waitAfterLeave() {
        var state = State()
        #expect(state.enter() == .granted)
        #expect(state.enter() == .mustWait)
        _ = state.leave()
        let now = state.wait(1)
        #expect(now == true)
        #expect(state.enter() == .mustWait, "1 holds it")
    }

    @Test("closing refuses the waiters and newcomers, hands back every connection, keeps none opened after")
    func close() {
        var state = State()
        let adopted = [state.adopt("reader", as: .reader), state.adopt("lane", as: .lane(0)), state.adopt("flusher", as: .flusher)]
        #expect(adopted == [true, true, true])
        state.drop(.flusher)
        #expect(state.session(.reader) == "reader" && state.session(.flusher) == nil)
        #expect(state.enter() == .granted)
        _ = state.wait(1)
        _ = state.wait(2)
        let (sessions, refused) = state.close()
        #expect(Set(sessions) == ["reader", "lane"])
        #expect(refused == [1, 2])
        #expect(state.isClosed)
        #expect(state.enter() == .refused)
        let late = state.wait(3)
        #expect(late == false)
        let handed = state.leave()
        #expect(handed == nil, "the holder goes on; nobody is handed the turn")
        let kept = state.adopt("late reader", as: .reader)
        #expect(!kept, "opened while it closed: the caller closes it")
        #expect(state.session(.reader) == nil)
        let again = state.close()
        #expect(again.sessions.isEmpty && again.refused.isEmpty)
    }

    @Test("after a batch failed, the next round reads each query on its own, and the one after batches again")
    func batchesPause() {
        var state = State()
        var mayBatch = state.roundMayBatch()
        #expect(mayBatch)
        state.batchFailed()
        mayBatch = state.roundMayBatch()
        #expect(!mayBatch)
        mayBatch = state.roundMayBatch()
        #expect(mayBatch)
    }
}
