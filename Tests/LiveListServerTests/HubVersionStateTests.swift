import LiveListWire
import Testing
@testable import LiveListServer

/// The version a hub's subscribers hold, as a value: counted and positioned versions, what each
/// result moves it to, and when a commit that left the result as it was is worth telling.
struct HubVersionStateTests {
    @Test("counted: each result is one more changeset, whatever its position")
    func counted() {
        var clock = HubVersionState(epoch: "e", isPositioned: false)
        #expect(clock.version == WireVersion(epoch: "e", sequence: 0))
        clock.started(at: 900)
        #expect(clock.version == WireVersion(epoch: "e", sequence: 0))
        #expect(clock.advanced(to: 950, observedAt: 7) == 0)
        #expect(clock.advanced(to: nil, observedAt: 8) == 1)
        #expect(clock.version == WireVersion(epoch: "e", sequence: 2) && clock.observedAt == 8)
        // Counted versions are never announced without a result.
        #expect(clock.announce(WireVersion(epoch: "e", sequence: 9), observedAt: 9) == nil)
        #expect(clock.version.sequence == 2)
    }

    @Test("positioned: a result is at its position, and a later position is announced once")
    func positioned() {
        var clock = HubVersionState(epoch: "p", isPositioned: true)
        #expect(clock.announce(WireVersion(epoch: "p", sequence: 5), observedAt: nil) == nil, "no result yet")
        clock.started(at: 100)
        #expect(clock.version == WireVersion(epoch: "p", sequence: 100))
        #expect(clock.advanced(to: 120, observedAt: 1) == 0)
        #expect(clock.version == WireVersion(epoch: "p", sequence: 120))
        #expect(clock.announce(WireVersion(epoch: "p", sequence: 130), observedAt: 2) == WireVersion(epoch: "p", sequence: 120))
        #expect(clock.version.sequence == 130 && clock.observedAt == 2)
        // Not after what they hold, or another epoch: nothing to tell.
        #expect(clock.announce(WireVersion(epoch: "p", sequence: 130), observedAt: 3) == nil)
        #expect(clock.announce(WireVersion(epoch: "q", sequence: 999), observedAt: 3) == nil)
        #expect(clock.observedAt == 2)
    }
}
