import Testing
@testable import LiveListOffline

/// When an offline store writes its lists, decided without I/O.
@Suite("Offline store's save schedule")
struct SaveScheduleTests {
    @Test("a change starts the delay once; the lists changed meanwhile are written together when it ends")
    func changesWaitForTheDelay() {
        var schedule = SaveSchedule()
        #expect(schedule.changed("inbox") == [.startDelay])
        #expect(schedule.changed("sent") == [])
        #expect(schedule.changed("inbox") == [])
        #expect(schedule.delayEnded() == [.write(["inbox", "sent"])])
        #expect(schedule.phase == .writing)
        #expect(schedule.wrote() == [])
        #expect(schedule.phase == .idle && schedule.changed.isEmpty)
    }

    @Test("one write at a time: a list changed during a write waits for it, then for the delay")
    func oneWriteAtATime() {
        var schedule = SaveSchedule()
        _ = schedule.changed("inbox")
        _ = schedule.delayEnded()
        #expect(schedule.changed("inbox") == [], "no second delay or write while one is under way")
        #expect(schedule.delayEnded() == [], "a stale delay does nothing")
        #expect(schedule.wrote() == [.startDelay])
        #expect(schedule.delayEnded() == [.write(["inbox"])])
    }

    @Test("a forgotten list is not written; a delay with nothing left writes nothing")
    func forgotten() {
        var schedule = SaveSchedule()
        _ = schedule.changed("inbox")
        schedule.forgot("inbox")
        #expect(schedule.delayEnded() == [])
        #expect(schedule.phase == .idle)
        #expect(schedule.changed("sent") == [.startDelay], "idle again: the next change starts a delay")
    }

    @Test("saving everything cancels the delay; a write under way still ends")
    func saveAll() {
        var schedule = SaveSchedule()
        _ = schedule.changed("inbox")
        #expect(schedule.savedAll() == [.cancelDelay])
        #expect(schedule.phase == .idle && schedule.changed.isEmpty)
        _ = schedule.changed("inbox")
        _ = schedule.delayEnded()
        _ = schedule.changed("sent")
        #expect(schedule.savedAll() == [], "the write under way is not cancelled")
        #expect(schedule.phase == .writing)
        #expect(schedule.wrote() == [], "what changed before the save was saved by it")
        #expect(schedule.phase == .idle)
    }
}
