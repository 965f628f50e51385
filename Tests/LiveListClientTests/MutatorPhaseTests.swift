import Testing
@testable import LiveListClient

/// A mutator's start, stop and resends after busy answers, decided without I/O.
@Suite("Mutator phase")
struct MutatorPhaseTests {
    @Test("busy answers in a row wait longer each time, up to 5 s; one resend waits at a time; an applied mutation starts the count again")
    func busyBackoff() {
        var phase = MutatorPhase()
        var delay = phase.busy()
        #expect(delay == nil, "stopped: nothing to resend")
        let first = phase.start(), second = phase.start()
        #expect(first && !second, "started once")
        delay = phase.busy()
        #expect(delay == .milliseconds(200))
        delay = phase.busy()
        #expect(delay == nil, "a resend waits already")
        var due = phase.resendDue()
        #expect(due)
        due = phase.resendDue()
        #expect(!due, "sent once")
        delay = phase.busy()
        #expect(delay == .milliseconds(400))
        due = phase.resendDue()
        #expect(due)
        for _ in 0..<6 {
            _ = phase.busy()
            _ = phase.resendDue()
        }
        delay = phase.busy()
        #expect(delay == .milliseconds(5_000), "capped")
        phase.applied()
        due = phase.resendDue()
        #expect(due, "the resend waiting still goes")
        delay = phase.busy()
        #expect(delay == .milliseconds(200), "the count started again")
    }

    @Test("stopping drops the resend waiting; started again, it counts from nothing")
    func stopDropsTheResend() {
        var phase = MutatorPhase()
        _ = phase.start()
        _ = phase.busy()
        phase.stop()
        let due = phase.resendDue()
        #expect(!phase.isStarted && !due)
        let started = phase.start()
        #expect(started)
        let delay = phase.busy()
        #expect(delay == .milliseconds(200))
    }
}
