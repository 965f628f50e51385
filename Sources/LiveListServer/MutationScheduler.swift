import ListDiff
import NIOCore

/// A server's mutations, from every connection, handed to its engine fairly: round-robin per
/// connection, at most `slots` with the engine at once, each connection's own one after another
/// in the order they came (the decisions: ``MutationScheduleState``). Engines run mutations one
/// at a time, first come first served; without this turn-taking a connection that keeps its
/// queue full would have the engine's queue to itself.
final class MutationScheduler: Sendable {
    /// A mutation's work: runs it through the engine, calls `leftEngine` as soon as the engine is
    /// done with it (its slot goes to the next connection in turn), then answers it. A work that
    /// returns without calling it frees its slot then.
    typealias Work = @Sendable (_ leftEngine: @escaping @Sendable () -> Void) async -> Void
    typealias ConnectionID = ObjectIdentifier

    private struct Guarded: Sendable {
        var state: MutationScheduleState<ConnectionID>
        /// The queued works of each connection, oldest first.
        var works: [ConnectionID: CircularBuffer<Work>] = [:]

        /// The works the state's actions start, taken off their queues.
        mutating func take(_ actions: [MutationScheduleState<ConnectionID>.Action]) -> [(ConnectionID, Work)] {
            actions.compactMap { action in
                guard case let .start(connection) = action, let work = works[connection]?.popFirst() else { return nil }
                if works[connection]?.isEmpty == true { works[connection] = nil }
                return (connection, work)
            }
        }
    }

    private let locked: Locked<Guarded>

    /// A scheduler that gives the engine at most `slots` mutations at once.
    init(slots: Int = 1) {
        locked = Locked(Guarded(state: MutationScheduleState(slots: slots)))
    }

    /// Queues `work` for `connection`; `false` (not queued) when `limit` of its mutations wait
    /// already, or the connection closed.
    func enqueue(_ connection: ConnectionID, limit: Int, _ work: @escaping Work) -> Bool {
        let (queued, starts) = locked.withLock { locked -> (Bool, [(ConnectionID, Work)]) in
            let (queued, actions) = locked.state.enqueue(connection, limit: limit)
            if queued { locked.works[connection, default: CircularBuffer()].append(work) }
            return (queued, locked.take(actions))
        }
        start(starts)
        return queued
    }

    /// Drops the mutations `connection` has waiting, unrun; the one under way ends.
    func close(_ connection: ConnectionID) {
        locked.withLock { locked in
            _ = locked.state.close(connection)
            locked.works[connection] = nil
        }
    }

    /// Mutations waiting their turn, in all and on the connection with the most.
    /// - Complexity: O(connections with mutations).
    var depth: (waiting: Int, deepest: Int) {
        locked.withLock { locked in
            locked.state.lanes.values.reduce((0, 0)) { ($0.0 + $1.queued, max($0.1, $1.queued)) }
        }
    }

    private func start(_ starts: [(ConnectionID, Work)]) {
        for (connection, work) in starts {
            Task {
                let slot = Slot()
                await work { [self] in if slot.free() { self.leftEngine(connection) } }
                _ = slot.free()
                start(locked.withLock { locked in
                    let actions = locked.state.answered(connection)
                    return locked.take(actions)
                })
            }
        }
    }

    private func leftEngine(_ connection: ConnectionID) {
        start(locked.withLock { locked in
            let actions = locked.state.leftEngine(connection)
            return locked.take(actions)
        })
    }
}

/// A running mutation's slot, freed once.
private final class Slot: Sendable {
    private let held = Locked(true)

    /// Whether this call freed it (it was held).
    func free() -> Bool {
        held.withLock { held in
            defer { held = false }
            return held
        }
    }
}
