import ListDiff

/// Which commit positions each delivered result of one query is the query's result at: a value,
/// fed by the rounds, tested without a database (`RoundDecisionTests`).
///
/// A position `p` stands for the database after exactly the commits whose commit record ends at
/// or before `p`. A result's own position is the end of the last commit that touched the query's
/// tables before it (its version on the wire, the same on every server over the database); it
/// holds from there until the next such commit. A round applies its commits in steps (see
/// `CommitSteps`): after each step the result is known again, at the end of the step's last
/// commit — a new result, or the same one again, which then holds anew from there; positions
/// inside a step of several commits are unknown. The current result holds on through the
/// engine's followed position (every commit up to it applied), passed to ``holds(_:at:followed:)``.
/// After a failure nothing is known until the query's result is read again.
///
/// Servers over one database use these positions as versions: a client that saw a result at `p`
/// on one server resumes on another that holds a result at `p`.
struct ResultPositions: Sendable {
    private struct Entry: Sendable {
        var position: UInt64
        /// Closed intervals of positions the state held through, oldest first.
        var intervals: [ClosedRange<UInt64>]
    }

    private var entries: [ListStateID: Entry] = [:]
    /// The states in the order they were recorded, to forget the oldest.
    private var order: [ListStateID] = []
    private var orderStart = 0
    let capacity: Int
    private(set) var current: ListStateID?
    /// Where the current state's open interval starts (it runs through the followed position);
    /// `nil` when the current state is not known to hold anywhere now (after a failure).
    private var openFrom: UInt64?
    /// The latest position the query announced: the current state's, or a later step that left it.
    private(set) var latest: UInt64 = 0
    /// The end of the first commit that touched the query and is not applied yet (taken by a
    /// round, or being read apart): the current state holds before it at most, whatever the
    /// followed position.
    var pendingFrom: UInt64?

    init(capacity: Int = 4_096) {
        self.capacity = max(1, capacity)
    }

    /// The query's result was read (opened, or refetched after a failure): `state`, which holds
    /// from `start` on.
    mutating func read(_ state: ListStateID, from start: UInt64) {
        close(through: nil)
        record(state, at: start)
    }

    /// A step of commits was applied — its first commit touching the query's tables ends at
    /// `first`, its last at `last` — and left `state`: a new one, or the current one unchanged,
    /// which then holds again from `last`.
    mutating func stepped(to state: ListStateID, first: UInt64, last: UInt64) {
        close(through: first > 0 ? first - 1 : nil)
        if state == current, entries[state] != nil {
            openFrom = last
            latest = max(latest, last)
            return
        }
        record(state, at: last)
    }

    /// The current state stops being known after `through` (the last position it is known to
    /// hold at; `nil`: not even there): a failure, or commits that may have been missed.
    mutating func failed(heldThrough through: UInt64?) {
        guard let start = openFrom else { return }
        openFrom = nil
        guard let through, through >= start, let current else { return }
        append(start...through, to: current)
    }

    /// Whether the current state is known to hold now (not since a failure, nor a first screen).
    var isFollowing: Bool { openFrom != nil }

    /// The position a delivered state is the result at (`nil` for one forgotten, or a first screen).
    func position(of state: ListStateID) -> UInt64? { entries[state]?.position }

    /// Whether `state` is the query's result at `position`, the current state holding on through
    /// `followed`.
    func holds(_ state: ListStateID, at position: UInt64, followed: UInt64) -> Bool {
        let through = min(max(followed, openFrom ?? 0), pendingFrom.map { $0 - 1 } ?? .max)
        if state == current, let openFrom, openFrom <= position, position <= through { return true }
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
        openFrom = position
        latest = max(latest, position)
    }

    /// Closes the open interval at `upper` (`nil`: drops it) into the current state's history.
    private mutating func close(through upper: UInt64?) {
        guard let start = openFrom, let current else {
            openFrom = nil
            return
        }
        openFrom = nil
        guard let upper, upper >= start else { return }
        append(start...upper, to: current)
    }

    private mutating func append(_ interval: ClosedRange<UInt64>, to state: ListStateID) {
        entries[state]?.intervals.append(interval)
        // Bounded: a state that holds on and off keeps its latest intervals.
        if let count = entries[state]?.intervals.count, count > 64 { entries[state]?.intervals.removeFirst(count - 64) }
    }
}
