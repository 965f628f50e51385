import ListDiff
import LiveListWire
import LiveQueryCore
import Logging

/// The shared live queries, one per (query, arguments), opened on the first subscription, kept
/// while subscribed and for an idle timeout after the last one leaves (so a client that
/// reconnects resumes from the changesets it missed), then closed.
actor HubRegistry {
    private var hubs: [HubKey: Hub] = [:]
    private var opening: [HubKey: Task<Hub, any Error>] = [:]
    private var subscribers: [HubKey: Int] = [:]
    private var idleGeneration: [HubKey: Int] = [:]
    private var isShutDown = false
    private var connections: [ObjectIdentifier: Outbox] = [:]
    /// Every connection's mutations, taken in turn (server-wide, as the connections are).
    nonisolated let mutationScheduler: MutationScheduler
    /// What health checks and scrapes read without a hop to this actor — on a busy server each hop
    /// waits for a thread of the pool (a scrape beside 10,000 subscribers took a second): kept in
    /// step with `hubs`, `subscribers` and `connections` by every method that changes them.
    private nonisolated let published = Locked(Published())

    private struct Published {
        var observers: [HubKey: HubObserver] = [:]
        var subscriptions = 0
        var connections = 0
    }

    /// A registry whose mutations go to the engine `mutationSlots` at a time.
    init(mutationSlots: Int = 1) {
        mutationScheduler = MutationScheduler(slots: mutationSlots)
    }

    /// Notes an open connection (to close it on shutdown); `false` once shut down.
    func register(_ outbox: Outbox) -> Bool {
        guard !isShutDown else { return false }
        connections[ObjectIdentifier(outbox)] = outbox
        let count = connections.count
        published.withLock { $0.connections = count }
        return true
    }

    func unregister(_ outbox: Outbox) {
        connections[ObjectIdentifier(outbox)] = nil
        let count = connections.count
        published.withLock { $0.connections = count }
    }

    /// The hub of `key`, opened with `open` when there is none; `subscriber` is counted and
    /// subscribed.
    func subscribe(_ key: HubKey, _ subscriber: Subscriber, window: Range<Int>, resume: WireResume?, switching: Detached? = nil,
                   open: @escaping @Sendable () async throws -> Hub) async throws -> Hub {
        guard !isShutDown else { throw CancellationError() }
        let hub: Hub
        if let existing = hubs[key] {
            hub = existing
        } else if let task = opening[key] {
            hub = try await task.value
        } else {
            let task = Task { try await open() }
            opening[key] = task
            defer { opening[key] = nil }
            hub = try await task.value
            if isShutDown {
                hub.close()
                throw CancellationError()
            }
            hubs[key] = hub
            published.withLock { $0.observers[key] = hub.observer }
        }
        subscribers[key, default: 0] += 1
        published.withLock { $0.subscriptions += 1 }
        idleGeneration[key, default: 0] += 1
        if let switching {
            hub.send(.switchIn(subscriber, window: window, from: switching))
        } else {
            hub.send(.subscribe(subscriber, window: window, resume: resume))
        }
        return hub
    }

    /// Moves `subscriber` from `old` to the hub of `key` (new arguments): the old hub stops
    /// sending to it and says what it holds; the new one sends one changeset from there.
    func move(_ subscriber: Subscriber, from old: Hub, to key: HubKey, window: Range<Int>, idleTimeout: Duration,
              open: @escaping @Sendable () async throws -> Hub) async throws -> Hub {
        let detached = await old.detach(subscriber)
        unsubscribe(old, subscriber, idleTimeout: idleTimeout)
        return try await subscribe(key, subscriber, window: detached?.window ?? window, resume: nil, switching: detached, open: open)
    }

    /// Takes `subscriber` off `hub`; the hub closes after `idleTimeout` without subscribers.
    func unsubscribe(_ hub: Hub, _ subscriber: Subscriber, idleTimeout: Duration) {
        hub.send(.unsubscribe(subscriber))
        guard hubs[hub.key] === hub, let count = subscribers[hub.key] else { return }
        subscribers[hub.key] = count - 1
        published.withLock { $0.subscriptions -= 1 }
        guard count - 1 == 0 else { return }
        idleGeneration[hub.key, default: 0] += 1
        let generation = idleGeneration[hub.key] ?? 0
        Task {
            try? await Task.sleep(for: idleTimeout)
            self.closeIfIdle(hub, generation: generation)
        }
    }

    private func closeIfIdle(_ hub: Hub, generation: Int) {
        guard hubs[hub.key] === hub, subscribers[hub.key] == 0, idleGeneration[hub.key] == generation else { return }
        drop(hub)
    }

    /// Forgets `hub` (its query stopped, or it idled) and closes it.
    func drop(_ hub: Hub) {
        guard hubs[hub.key] === hub else { return }
        hubs[hub.key] = nil
        let gone = subscribers.removeValue(forKey: hub.key) ?? 0
        published.withLock { published in
            published.observers[hub.key] = nil
            published.subscriptions -= gone
        }
        hub.close()
    }

    /// What a health check reads, without a hop to the registry: the open live queries, the
    /// subscriptions, the connections, and the live queries whose hubs have left events unhandled
    /// (published name, since when).
    /// - Complexity: O(open live queries).
    nonisolated var figures: (queries: Int, subscriptions: Int, connections: Int, waiting: [(query: String, since: ContinuousClock.Instant)]) {
        published.withLock { published in
            let waiting = published.observers.compactMap { key, observer in observer.waitingSince.map { (query: key.name, since: $0) } }
            return (published.observers.count, published.subscriptions, published.connections, waiting)
        }
    }

    /// The WebSocket connections being served (until each ends, shutdown or not).
    var connectionCount: Int { connections.count }

    /// Closes every hub; no more are opened.
    func shutDown() {
        isShutDown = true
        // Each stays listed until its connection ends (`unregister`): shutdown drains them.
        for outbox in connections.values {
            outbox.close(code: WireCloseCode.goingAway.rawValue, reason: "the server is shutting down")
        }
        for hub in hubs.values { hub.close() }
        hubs = [:]
        subscribers = [:]
        published.withLock { published in
            published.observers = [:]
            published.subscriptions = 0
        }
    }
}
