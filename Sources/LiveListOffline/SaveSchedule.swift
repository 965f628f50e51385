/// When an ``OfflineStore`` writes its lists, as a value: the lists changed since the last write,
/// and whether the store waits for ``OfflineStore/saveDelay`` or a write is under way. Events in
/// (a list changed, the delay ran out, a write ended, a save asked for), actions out (start or
/// cancel the delay, write these lists); the store does the I/O. At most one write is under way;
/// lists that change meanwhile wait for the next one.
struct SaveSchedule: Equatable {
    enum Phase: Equatable {
        /// Nothing to write, nothing under way.
        case idle
        /// The delay runs; the lists changed are written when it ends.
        case waiting
        /// A write is under way; lists changed meanwhile are written after it.
        case writing
    }

    enum Action: Equatable {
        case startDelay
        case cancelDelay
        /// Write these lists (their current state), off the main actor.
        case write(Set<String>)
    }

    private(set) var phase = Phase.idle
    /// The lists changed and not yet handed to a write.
    private(set) var changed: Set<String> = []

    /// The list under `key` changed.
    mutating func changed(_ key: String) -> [Action] {
        changed.insert(key)
        guard phase == .idle else { return [] }
        phase = .waiting
        return [.startDelay]
    }

    /// The list under `key` is no longer kept: it is not written.
    mutating func forgot(_ key: String) {
        changed.remove(key)
    }

    /// The delay ran out: the lists changed go to a write.
    mutating func delayEnded() -> [Action] {
        guard phase == .waiting else { return [] }
        guard !changed.isEmpty else {
            phase = .idle
            return []
        }
        phase = .writing
        defer { changed = [] }
        return [.write(changed)]
    }

    /// The write under way ended (whether it succeeded): lists changed meanwhile wait for the delay.
    mutating func wrote() -> [Action] {
        guard phase == .writing else { return [] }
        guard !changed.isEmpty else {
            phase = .idle
            return []
        }
        phase = .waiting
        return [.startDelay]
    }

    /// Every list is being written now (``OfflineStore/save()``): nothing changed waits any more.
    /// A write under way stays under way (it ends with ``wrote()``); a delay that runs is cancelled.
    mutating func savedAll() -> [Action] {
        changed = []
        guard phase == .waiting else { return [] }
        phase = .idle
        return [.cancelDelay]
    }
}
