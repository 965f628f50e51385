import Foundation
import LiveListClient
import LiveListWire
import Testing
@testable import LiveListServer

/// A registry's open hubs, their subscribers and idle timers, without I/O; and a server that holds
/// nothing for the hubs it closed.
@Suite("Hub table")
struct HubTableTests {
    final class Hub {}

    @Test("the last departure starts an idle timer; an arrival before it runs makes it stale; the hub closes at the current one")
    func idleTimers() {
        var table = HubTable<String, Hub>()
        let hub = Hub()
        let arrived = (table.subscribe(hub, "a"), table.subscribe(hub, "a"))
        #expect(arrived == (true, true))
        let left = table.unsubscribe(hub, "a")
        #expect(left == .stillSubscribed)
        guard case let .idle(first) = table.unsubscribe(hub, "a") else {
            Issue.record("the last departure is idle")
            return
        }
        let back = table.subscribe(hub, "a")
        #expect(back, "someone comes back before the timer")
        let staleFired = table.idleTimerFired(hub, "a", generation: first)
        #expect(!staleFired, "that timer is stale")
        guard case let .idle(second) = table.unsubscribe(hub, "a") else {
            Issue.record("the last departure is idle")
            return
        }
        let stale = table.idleTimerFired(hub, "a", generation: first)
        let current = table.idleTimerFired(hub, "a", generation: second)
        #expect(!stale && current)
        #expect(table.count == 0 && table.hub("a") == nil, "nothing is kept for a closed hub")
        let after = table.unsubscribe(hub, "a")
        #expect(after == .notOpen)
    }

    @Test("a hub that is not the key's open one counts nothing: replaced, removed, or a second hub for the key")
    func identity() {
        var table = HubTable<String, Hub>()
        let old = Hub(), new = Hub()
        let first = table.subscribe(old, "a")
        let second = table.subscribe(new, "a")
        #expect(first && !second, "one hub per key")
        let removed = (table.remove(old, "a"), table.remove(old, "a"))
        #expect(removed.0 == 1 && removed.1 == nil)
        let reopened = table.subscribe(new, "a")
        let oldLeft = table.unsubscribe(old, "a")
        let oldTimer = table.idleTimerFired(old, "a", generation: 1)
        #expect(reopened && oldLeft == .notOpen && !oldTimer, "the old hub's subscriber and timer change nothing of the new one")
        #expect(table.hub("a") === new)
        let all = table.removeAll()
        #expect(all.count == 1 && table.count == 0)
    }

    @Test("a server whose clients used 40 argument sets holds nothing for them once their hubs closed")
    @MainActor
    func closedHubsLeaveNothing() async throws {
        var configuration = LiveListServer.Configuration()
        configuration.idleTimeout = .milliseconds(50)
        let fixture = try await WireFixture.start(rows: 20, seed: 7, configuration: configuration)
        let session = RemoteSession(url: fixture.url)
        for folder in 0..<40 {
            let remote = RemoteLiveQuery(session: session, query: "inbox", arguments: ["folder": .text("folder \(folder)")])
            remote.start()
            try await eventually("list \(folder) holds its first state") { remote.model.version != nil }
            remote.stop()
        }
        let registry = fixture.server.registry
        try await eventuallyAsync("every hub closed", seconds: 20) { await registry.keysHeld == 0 }
        #expect(registry.figures.queries == 0 && registry.figures.subscriptions == 0)
        await fixture.stop()
    }
}
