import ListDiff

/// Which commit positions each delivered result of one query is the query's result at: a value,
/// fed by the rounds, tested without a database (`StateVersionsTests`).
///
/// A position `p` stands for the database after exactly the commits whose commit record ends at
/// or before `p` (every update's version is the end of its last commit, and the slot's position
/// is one too). A result holds at its own position, and goes on holding at later ones as long as
/// no commit touches the query's tables: when a commit does, the result's interval closes just
/// before it, even when the round ends with the same result — within a round several commits
/// may change the list and change it back, so positions inside it are unknown. After a round
/// that leaves the result as it was, the result holds again from the round's position. After a
/// failure nothing is known until a round succeeds.
///
/// Servers over one database use these positions as versions: a client that saw a result at `p`
/// on one server resumes on another that holds a result at `p` (``holds(_:at:)``).
struct _StateVersions: Sendable {
    private struct Entry: Sendable {
        var position: UInt64
        /// Closed intervals of positions the state held through, oldest first.
        var intervals: [ClosedRange<UInt64>]
    }

    private var entries: [ListStateID: Entry] = [:]
    /// The states in the order they were delivered, to forget the oldest.
    private var order: [ListStateID] = []
    private var orderStart = 0
    let capacity: Int
    private(set) var current: ListStateID?
    /// The interval the current state is known to hold through, still open at its end.
    private var open: ClosedRange<UInt64>?
    /// The position of the round being applied: the position of a state delivered by it before
    /// ``settled(_:at:)`` records it.
    private var inFlight: UInt64?
    /// The newest generation recorded: a later one is the state in flight.
    private var newestGeneration: UInt64 = 0
    /// The generation of the state the round in flight replaces (a first screen, before its whole
    /// result, is not at the round's position).
    private var replacedGeneration: UInt64 = 0

    init(capacity: Int = 4_096) {
        self.capacity = max(1, capacity)
    }

    /// The query opened (or refetched after a failure) with `state` at `position`.
    mutating func started(_ state: ListStateID, at position: UInt64) {
        closeOpen(through: nil)
        record(state, at: position)
    }

    /// A commit ending at `position` was absorbed. One that did not touch the query's tables
    /// leaves the current state holding through it (unless nothing is known since a failure);
    /// one that did ends the state's interval just before it.
    mutating func committed(at position: UInt64, touching: Bool) {
        guard let interval = open else { return }
        if touching {
            if position > interval.lowerBound { open = interval.lowerBound...max(interval.upperBound, position - 1) }
            closeOpen(through: nil)
        } else if position > interval.upperBound {
            open = interval.lowerBound...position
        }
    }

    /// The round whose commits end at `position` is being applied to `replaced` (the state delivered
    /// last): a state it delivers — newer than `replaced` — is at `position` before
    /// ``settled(_:at:)`` records it.
    mutating func applying(at position: UInt64, replacing replaced: ListStateID?) {
        inFlight = position
        replacedGeneration = replaced?.generation ?? 0
    }

    /// The round applied at `position` succeeded and left `state` — a new one, or the current one
    /// unchanged, which then holds again from `position`.
    mutating func settled(_ state: ListStateID, at position: UInt64) {
        inFlight = nil
        if state == current {
            closeOpen(through: nil)
            open = position...position
            return
        }
        closeOpen(through: nil)
        record(state, at: position)
    }

    /// A round failed or commits may have been missed: nothing is known until one succeeds.
    mutating func failed() {
        closeOpen(through: nil)
        inFlight = nil
    }

    /// The position a delivered state is the result at (`nil` for one forgotten, or unknown).
    func position(of state: ListStateID) -> UInt64? {
        if let entry = entries[state] { return entry.position }
        // The state in flight is newer than any recorded, of the same source (a query that opened
        // with a first screen has none recorded before its whole result).
        if state.generation > max(newestGeneration, replacedGeneration), current.map({ $0.source == state.source }) ?? true { return inFlight }
        return nil
    }

    /// Whether `state` is the query's result at `position`.
    func holds(_ state: ListStateID, at position: UInt64) -> Bool {
        if state == current, let open, open.contains(position) { return true }
        guard let entry = entries[state] else { return false }
        return entry.intervals.contains { $0.contains(position) }
    }

    private mutating func record(_ state: ListStateID, at position: UInt64) {
        if entries[state] == nil {
            order.append(state)
            if order.count - orderStart > capacity {
                entries[order[orderStart]] = nil
                orderStart += 1
                if orderStart > capacity {
                    order.removeFirst(orderStart)
                    orderStart = 0
                }
            }
        }
        entries[state] = Entry(position: position, intervals: entries[state]?.intervals ?? [])
        current = state
        newestGeneration = max(newestGeneration, state.generation)
        open = position...position
    }

    /// Keeps the open interval, cut to end at `upper` (`nil`: where it reached), in the current
    /// state's history.
    private mutating func closeOpen(through upper: UInt64?) {
        guard let interval = open, let current else {
            open = nil
            return
        }
        open = nil
        let end = min(upper ?? interval.upperBound, interval.upperBound)
        guard end >= interval.lowerBound else { return }
        entries[current]?.intervals.append(interval.lowerBound...end)
        // Bounded: a state that holds on and off keeps its latest intervals.
        if let count = entries[current]?.intervals.count, count > 64 { entries[current]?.intervals.removeFirst(count - 64) }
    }
}
