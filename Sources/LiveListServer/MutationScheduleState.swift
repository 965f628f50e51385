import NIOCore

/// The decisions of a server's mutation scheduler (``MutationScheduler``), as a value: events
/// in — a mutation queued on a connection, one leaving the engine, one answered, a connection
/// closed — and the connections whose next mutation goes to the engine out. No lock, no task, no
/// I/O.
///
/// Fairness: at most `slots` mutations are with the engine at once (engines run them one at a
/// time anyway), and a free slot goes to the connections that wait in turn — round-robin, one
/// mutation each — so a connection with a full queue delays another's mutation by at most one
/// of its own per slot, however many it has queued. A connection's own mutations run one after
/// another in the order they came: its next waits until the last was answered (its `mutated`
/// waits for the commit's changes), but only the engine's part holds a slot.
///
/// Each connection keeps at most `limit` mutations queued (not yet with the engine; its
/// server's `maximumPendingMutations`); past it, a mutation is refused.
struct MutationScheduleState<Connection: Hashable & Sendable>: Sendable {
    /// Where a connection's lane is.
    enum Phase: Equatable {
        /// Mutations wait; the connection is in ``turns``.
        case waiting
        /// Its oldest mutation is with the engine and holds a slot.
        case running
        /// Its oldest mutation left the engine and is being answered: the next waits for that.
        case answering
    }

    /// A connection with mutations waiting or under way.
    struct Lane: Equatable {
        var phase: Phase
        /// Mutations queued and not started.
        var queued: Int
        /// The connection closed: its queued mutations were dropped; the one under way ends.
        var isClosed = false
    }

    /// What the scheduler does outside.
    enum Action: Equatable {
        /// Start the oldest queued mutation of the connection (it holds a slot).
        case start(Connection)
    }

    /// Mutations the engine may hold at once.
    let slots: Int
    private(set) var lanes: [Connection: Lane] = [:]
    /// The connections whose next mutation waits for a slot, in turn.
    private(set) var turns = CircularBuffer<Connection>()
    /// Slots taken.
    private(set) var running = 0

    init(slots: Int) {
        self.slots = max(1, slots)
    }

    /// A mutation of `connection` to queue: `false` when the connection has `limit` queued
    /// already (or closed), and the mutations to start now.
    /// - Complexity: O(1) amortized.
    mutating func enqueue(_ connection: Connection, limit: Int) -> (queued: Bool, actions: [Action]) {
        var lane = lanes[connection] ?? Lane(phase: .waiting, queued: 0)
        guard !lane.isClosed, lane.queued < limit else { return (false, []) }
        let isNew = lanes[connection] == nil
        lane.queued += 1
        lanes[connection] = lane
        if isNew { turns.append(connection) }
        return (true, fill())
    }

    /// The engine is done with `connection`'s running mutation: its slot is free; its answer is
    /// being made.
    mutating func leftEngine(_ connection: Connection) -> [Action] {
        guard var lane = lanes[connection], lane.phase == .running else { return [] }
        running -= 1
        lane.phase = .answering
        lanes[connection] = lane
        return fill()
    }

    /// `connection`'s mutation under way was answered (or dropped): its next, if any, waits for its
    /// turn, behind every connection already waiting.
    mutating func answered(_ connection: Connection) -> [Action] {
        guard var lane = lanes[connection], lane.phase != .waiting else { return [] }
        if lane.phase == .running { running -= 1 }
        if lane.isClosed || lane.queued == 0 {
            lanes[connection] = nil
        } else {
            lane.phase = .waiting
            lanes[connection] = lane
            turns.append(connection)
        }
        return fill()
    }

    /// `connection` closed: the mutations it has queued are dropped unrun (the count given); the
    /// one under way, if any, ends as it will.
    /// - Complexity: O(c) for c connections waiting.
    mutating func close(_ connection: Connection) -> Int {
        guard var lane = lanes[connection] else { return 0 }
        let dropped = lane.queued
        if lane.phase == .waiting {
            lanes[connection] = nil
            turns.removeAll { $0 == connection }
        } else {
            lane.queued = 0
            lane.isClosed = true
            lanes[connection] = lane
        }
        return dropped
    }

    /// Hands free slots to the waiting connections, in turn.
    private mutating func fill() -> [Action] {
        var actions: [Action] = []
        while running < slots, let connection = turns.popFirst() {
            guard var lane = lanes[connection], lane.phase == .waiting, lane.queued > 0 else { continue }
            lane.queued -= 1
            lane.phase = .running
            lanes[connection] = lane
            running += 1
            actions.append(.start(connection))
        }
        return actions
    }
}
