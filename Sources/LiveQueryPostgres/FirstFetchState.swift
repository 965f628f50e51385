/// Where a query that opened with its first screen stands with the rest of its result, as one
/// value: the rest being read (beside the rounds, in the first screen's snapshot), the rest read
/// and waiting for a round to complete the result with it, or the result whole. Until it is whole
/// the value holds where the whole result will hold from (the last commit that touched the query
/// meanwhile, else where the first screen was read) and who waits for it; once whole, nothing.
/// Events in — a commit touched the query, the rest arrived, someone waits, the result was
/// completed (or the query stopped) — and the waiters to wake out. No lock, no I/O:
/// `PostgresQueryRunner` holds it in a `Locked` box and resumes the waiters.
struct FirstFetchState<Rest, Waiter> {
    enum State {
        /// The rest is being read.
        case reading(holdsFrom: UInt64, waiters: [Waiter])
        /// The rest was read: the next round completes the result with it.
        case read(Rest, holdsFrom: UInt64, waiters: [Waiter])
        /// The result is whole (or the query stopped).
        case whole
    }

    private(set) var state: State

    /// A result read whole (`whole`), or a first screen read at `holdsFrom`, the end of the last
    /// commit before it that touched the query's tables.
    init(whole: Bool, holdsFrom: UInt64) {
        state = whole ? .whole : .reading(holdsFrom: holdsFrom, waiters: [])
    }

    /// Whether the result is whole (not a first screen waiting for the rest).
    var isWhole: Bool {
        if case .whole = state { return true }
        return false
    }

    /// The rest, once read and until the result is completed with it, and where the whole result
    /// holds from.
    var rest: (rest: Rest, holdsFrom: UInt64)? {
        guard case let .read(rest, holdsFrom, _) = state else { return nil }
        return (rest, holdsFrom)
    }

    /// A commit that ends at `end` touched the query's tables while the rest is read: the whole
    /// result holds from there at the earliest.
    mutating func touched(at end: UInt64) {
        switch state {
        case let .reading(_, waiters): state = .reading(holdsFrom: end, waiters: waiters)
        case let .read(rest, _, waiters): state = .read(rest, holdsFrom: end, waiters: waiters)
        case .whole: break
        }
    }

    /// The rest was read (a failure to read it is a rest too: the round that completes the
    /// result tells it). Dropped when the result is whole already (the query stopped).
    mutating func arrived(_ rest: Rest) {
        guard case let .reading(holdsFrom, waiters) = state else { return }
        state = .read(rest, holdsFrom: holdsFrom, waiters: waiters)
    }

    /// `waiter` waits for the whole result: `true` when it is queued, `false` when the result is
    /// whole already (it is woken at once).
    mutating func wait(_ waiter: Waiter) -> Bool {
        switch state {
        case let .reading(holdsFrom, waiters): state = .reading(holdsFrom: holdsFrom, waiters: waiters + [waiter])
        case let .read(rest, holdsFrom, waiters): state = .read(rest, holdsFrom: holdsFrom, waiters: waiters + [waiter])
        case .whole: return false
        }
        return true
    }

    /// The result is whole — completed, or the query stopped (the rest, if read, goes): the
    /// waiters to wake, in the order they came.
    mutating func complete() -> [Waiter] {
        defer { state = .whole }
        switch state {
        case let .reading(_, waiters), let .read(_, _, waiters): return waiters
        case .whole: return []
        }
    }
}
