import ListDiff
import LiveListWire
import LiveQueryCore
import Logging

/// The shared live queries, one per (query, arguments), opened on the first subscription, kept
/// while subscribed and for an idle timeout after the last one leaves (so a client that
/// reconnects resumes from the changesets it missed), then closed.
actor HubRegistry {
    /// The open hubs, their subscribers and idle generations.
    private var table = HubTable<HubKey, Hub>()
    /// The hubs being opened: a second subscriber waits for the first one's open.
    private var opening: [HubKey: Task<Hub, any Error>] = [:]
    private var isShutDown = false
    private var connections: [ObjectIdentifier: Outbox] = [:]
    /// Every connection's mutations, taken in turn (server-wide, as the connections are).
    nonisolated let mutationScheduler: MutationScheduler
    /// What health checks and scrapes read without a hop to this actor — on a busy server each hop
    /// waits for a thread of the pool (a scrape beside 10,000 subscribers took a second): kept in
    /// step with `table` and `connections` by every method that changes them.
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
        if let existing = table.hub(key) {
            hub = existing
        } else if let task = opening[key] {
            hub = try await task.value
            // The opener closes it when the server shut down meanwhile.
            guard !isShutDown else { throw CancellationError() }
        } else {
            let task = Task { try await open() }
            opening[key] = task
            defer { opening[key] = nil }
            hub = try await task.value
            if isShutDown {
                hub.close()
                throw CancellationError()
            }
            published.withLock { $0.observers[key] = hub.observer }
        }
        guard table.subscribe(hub, key) else {
            // Its query stopped while this subscriber waited, and another hub opened for the key:
            // that one is the key's now.
            return try await subscribe(key, subscriber, window: window, resume: resume, switching: switching, open: open)
        }
        published.withLock { $0.subscriptions += 1 }
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
        let departure = table.unsubscribe(hub, hub.key)
        guard departure != .notOpen else { return }
        published.withLock { $0.subscriptions -= 1 }
        guard case let .idle(generation) = departure else { return }
        Task {
            try? await Task.sleep(for: idleTimeout)
            self.closeIfIdle(hub, generation: generation)
        }
    }

    private func closeIfIdle(_ hub: Hub, generation: Int) {
        guard table.idleTimerFired(hub, hub.key, generation: generation) else { return }
        published.withLock { $0.observers[hub.key] = nil }
        hub.close()
    }

    /// Forgets `hub` (its query stopped, or it idled) and closes it.
    func drop(_ hub: Hub) {
        guard let gone = table.remove(hub, hub.key) else { return }
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

    /// The keys the registry holds anything for: its open hubs and those being opened. Nothing
    /// stays for a key whose hub closed.
    var keysHeld: Int { table.count + opening.count }

    /// Closes every hub; no more are opened.
    func shutDown() {
        isShutDown = true
        // Each stays listed until its connection ends (`unregister`): shutdown drains them.
        for outbox in connections.values {
            outbox.close(code: WireCloseCode.goingAway.rawValue, reason: "the server is shutting down")
        }
        for hub in table.removeAll() { hub.close() }
        published.withLock { published in
            published.observers = [:]
            published.subscriptions = 0
        }
    }
}
