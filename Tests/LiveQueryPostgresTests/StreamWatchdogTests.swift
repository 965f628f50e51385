import Testing
@testable import LiveQueryPostgres

/// The watchdog's decisions and the lag it measures, fed positions and a clock, without PostgreSQL.
@Suite("Stream watchdog")
struct StreamWatchdogTests {
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1_000)) }

    @Test("a stream that keeps up is following and has no lag; one a probe behind asks the server for its position")
    func following() {
        var watchdog = StreamWatchdog(bound: .seconds(10))
        #expect(watchdog.lag(applied: 0, at: at(0)) == nil, "nothing measured before the first probe")
        #expect(watchdog.probed(wal: 100, received: 100, applied: 100, at: at(0)) == .following)
        #expect(watchdog.lag(applied: 100, at: at(0.5))! == (0, .zero))
        // The WAL moved past what the stream received: ask.
        #expect(watchdog.probed(wal: 200, received: 100, applied: 100, at: at(1)) == .askPosition)
        #expect(watchdog.lag(applied: 100, at: at(1.5))! == (100, .milliseconds(500)))
        // It arrives and is applied: following again, no lag.
        watchdog.note(received: 200, applied: 200, at: at(1.6))
        #expect(watchdog.lag(applied: 200, at: at(1.6))! == (0, .zero))
        #expect(watchdog.probed(wal: 200, received: 200, applied: 200, at: at(2)) == .following)
        #expect(watchdog.unreached.isEmpty)
    }

    @Test("the lag in seconds runs from the first probe that saw WAL still not applied, through later probes")
    func lagFromFirstSighting() {
        var watchdog = StreamWatchdog(bound: .seconds(100))
        _ = watchdog.probed(wal: 100, received: 100, applied: 100, at: at(0))
        _ = watchdog.probed(wal: 150, received: 100, applied: 100, at: at(1))
        _ = watchdog.probed(wal: 300, received: 100, applied: 100, at: at(2))
        #expect(watchdog.lag(applied: 100, at: at(4))! == (200, .seconds(3)))
        // Applied through 150: the lag counts from the sighting of 300.
        watchdog.note(received: 150, applied: 150, at: at(4))
        #expect(watchdog.lag(applied: 150, at: at(4))! == (150, .seconds(2)))
    }

    @Test("silent past the bound while the WAL moved: reconnect once, then not again within the bound")
    func silentStall() {
        var watchdog = StreamWatchdog(bound: .seconds(10))
        _ = watchdog.probed(wal: 100, received: 100, applied: 100, at: at(0))
        for second in 1..<11 {
            let decision = watchdog.probed(wal: 100 + UInt64(second) * 10, received: 100, applied: 100, at: at(Double(second)))
            #expect(decision == .askPosition, "second \(second)")
        }
        let fired = watchdog.probed(wal: 300, received: 100, applied: 100, at: at(11))
        guard case let .reconnect(stall) = fired else {
            Issue.record("expected a reconnect, got \(fired)")
            return
        }
        #expect(stall.walPosition == 110 && stall.since == at(1) && !stall.receivedButNotApplied)
        #expect(watchdog.firings == 1)
        #expect(watchdog.probed(wal: 310, received: 100, applied: 100, at: at(12)) == .askPosition, "not again within the bound")
        if case .reconnect = watchdog.probed(wal: 320, received: 100, applied: 100, at: at(21)) {} else {
            Issue.record("a stall that goes on fires again after the bound")
        }
        #expect(watchdog.firings == 2)
    }

    @Test("a stream that receives, however slowly (a long transaction decoding), is not stalled")
    func slowNotStalled() {
        var watchdog = StreamWatchdog(bound: .seconds(5))
        _ = watchdog.probed(wal: 1_000, received: 0, applied: 0, at: at(0))
        for second in 1...30 {
            let decision = watchdog.probed(wal: 1_000, received: UInt64(second), applied: UInt64(second), at: at(Double(second)))
            #expect(decision == .askPosition, "second \(second): \(decision)")
        }
        #expect(watchdog.firings == 0)
        #expect(watchdog.lag(applied: 30, at: at(30))! == (970, .seconds(30)), "still behind: the lag says so")
    }

    @Test("received but not applied past the bound: the engine is stuck, whatever the stream brings")
    func engineStuck() {
        var watchdog = StreamWatchdog(bound: .seconds(5))
        _ = watchdog.probed(wal: 100, received: 100, applied: 100, at: at(0))
        var decision = watchdog.probed(wal: 200, received: 200, applied: 100, at: at(1))
        for second in 2...5 { decision = watchdog.probed(wal: 200 + UInt64(second), received: 200 + UInt64(second), applied: 100, at: at(Double(second))) }
        #expect(decision == .following, "the stream holds the WAL; only the bound is not up yet")
        decision = watchdog.probed(wal: 210, received: 210, applied: 100, at: at(6))
        guard case let .reconnect(stall) = decision else {
            Issue.record("expected a reconnect, got \(decision)")
            return
        }
        #expect(stall.receivedButNotApplied && stall.walPosition == 200)
    }

    @Test("WAL that stays put needs nothing: an idle database is following")
    func idle() {
        var watchdog = StreamWatchdog(bound: .seconds(1))
        for second in 0..<100 {
            #expect(watchdog.probed(wal: 500, received: 500, applied: 500, at: at(Double(second))) == .following)
        }
        #expect(watchdog.firings == 0 && watchdog.unreached.isEmpty)
    }

    @Test("samples stay bounded however long the stream is behind, the lag still measured from the first")
    func boundedSamples() {
        var watchdog = StreamWatchdog(bound: .seconds(1_000_000))
        for second in 0..<(StreamWatchdog.maximumSamples + 500) {
            _ = watchdog.probed(wal: 1 + UInt64(second), received: 0, applied: 0, at: at(Double(second)))
        }
        #expect(watchdog.unreached.count == StreamWatchdog.maximumSamples)
        #expect(watchdog.lag(applied: 0, at: at(Double(StreamWatchdog.maximumSamples + 500)))!.seconds
            == .seconds(StreamWatchdog.maximumSamples + 500))
    }
}
