import Testing
@testable import LiveQueryPostgres

/// The runner's standing with its replication stream — sessions, missed commits, outages — as a
/// value, without PostgreSQL.
@Suite("Stream state")
struct StreamStateTests {
    @Test("the first session starts the runner at its position; a later one means commits may be missed, refetched once, told unless told already")
    func sessions() {
        var state = StreamState()
        #expect(!state.hadSession)
        var missed = state.takeMissedCommits()
        #expect(missed == nil)
        var first = state.sessionStarted()
        #expect(first)
        missed = state.takeMissedCommits()
        #expect(state.sessions == .following && missed == nil)
        first = state.sessionStarted()
        #expect(!first && state.sessions == .commitsMayBeMissed)
        missed = state.takeMissedCommits()
        #expect(missed == .tellQueries)
        missed = state.takeMissedCommits()
        #expect(missed == nil, "once")
        // An outage told already is not told again when its new slot comes.
        let trouble = state.trouble(at: .now, lostAt: nil, lostConnection: false)
        #expect(trouble.tellQueries)
        first = state.sessionStarted()
        missed = state.takeMissedCommits()
        #expect(!first && missed == .outageToldAlready)
    }

    @Test("a lost connection is told after the grace, from when it was lost; another failure at once; once per outage; retries back off from 50 ms to 1 s")
    func outages() {
        var state = StreamState()
        let start = ContinuousClock.now
        var trouble = state.trouble(at: start, lostAt: nil, lostConnection: true)
        #expect(!trouble.tellQueries && trouble.retryIn == .milliseconds(50))
        trouble = state.trouble(at: start + .seconds(2), lostAt: nil, lostConnection: true)
        #expect(!trouble.tellQueries && trouble.retryIn == .milliseconds(500))
        // The stream says it was lost earlier than the first failed round: the grace counts from then.
        trouble = state.trouble(at: start + .seconds(3), lostAt: start - .seconds(2), lostConnection: true)
        #expect(trouble.tellQueries && trouble.retryIn == .milliseconds(750))
        trouble = state.trouble(at: start + .seconds(20), lostAt: nil, lostConnection: false)
        #expect(!trouble.tellQueries && trouble.retryIn == .seconds(1), "told once per outage")
        state.recovered()
        trouble = state.trouble(at: start + .seconds(30), lostAt: nil, lostConnection: false)
        #expect(trouble.tellQueries, "a failure that is not a lost connection is told at once")
    }
}
