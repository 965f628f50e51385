/// The open hubs of a registry, one entry per key: the hub, how many subscribe to it, and the
/// generation that tells a stale idle timer from the current one. An entry exists exactly while
/// its hub is open, so nothing is left behind for a key whose hub closed — a server whose clients
/// use ever new arguments holds no more than its open hubs.
///
/// A value with no I/O (the registry opens, closes and times): generic over the hub and the key
/// so that it is tested with plain objects.
struct HubTable<Key: Hashable, Hub: AnyObject> {
    struct Entry {
        let hub: Hub
        var subscribers = 0
        /// Moves on with every arrival and with the last departure: an idle timer closes the hub
        /// only when it is still the generation it was started with.
        var generation = 0
    }

    private var entries: [Key: Entry] = [:]

    /// The open hubs.
    var count: Int { entries.count }

    var hubs: [Hub] { entries.values.map(\.hub) }

    /// The open hub of `key`.
    func hub(_ key: Key) -> Hub? { entries[key]?.hub }

    /// A subscriber arrives at `hub`, open for `key` (added when it is not there yet): any idle
    /// timer started before is stale from now on. `false` when another hub is open for `key`.
    mutating func subscribe(_ hub: Hub, _ key: Key) -> Bool {
        var entry = entries.removeValue(forKey: key) ?? Entry(hub: hub)
        guard entry.hub === hub else {
            entries[key] = entry
            return false
        }
        entry.subscribers += 1
        entry.generation += 1
        entries[key] = entry
        return true
    }

    /// What one subscriber's departure did.
    enum Departure: Equatable {
        /// `hub` is not the open hub of its key (closed, or replaced): nothing was counted.
        case notOpen
        /// Others still subscribe.
        case stillSubscribed
        /// It was the last: start an idle timer for this generation.
        case idle(generation: Int)
    }

    /// A subscriber leaves `hub`.
    mutating func unsubscribe(_ hub: Hub, _ key: Key) -> Departure {
        guard var entry = entries[key], entry.hub === hub, entry.subscribers > 0 else { return .notOpen }
        entry.subscribers -= 1
        if entry.subscribers == 0 { entry.generation += 1 }
        entries[key] = entry
        return entry.subscribers == 0 ? .idle(generation: entry.generation) : .stillSubscribed
    }

    /// An idle timer of `generation` ran out: `true` when `hub` is to close (no one came back
    /// meanwhile), and then its entry is gone.
    mutating func idleTimerFired(_ hub: Hub, _ key: Key, generation: Int) -> Bool {
        guard let entry = entries[key], entry.hub === hub, entry.subscribers == 0, entry.generation == generation else { return false }
        entries[key] = nil
        return true
    }

    /// Forgets `hub` (its query stopped): the subscribers it had, or `nil` when it was not open.
    mutating func remove(_ hub: Hub, _ key: Key) -> Int? {
        guard let entry = entries[key], entry.hub === hub else { return nil }
        entries[key] = nil
        return entry.subscribers
    }

    /// Forgets every hub, returning them.
    mutating func removeAll() -> [Hub] {
        defer { entries = [:] }
        return hubs
    }
}
