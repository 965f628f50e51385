import ListDiff

/// The `sync`s (and mutations' notices) a hub has not answered yet, as a value: each waits for
/// the state it was asked at — the state the look found — to be the hub's result or one it went
/// past. Events in (asked, a result passed a state), the answers due out; the hub sends them.
/// Tested without I/O.
struct PendingSyncs<Waiter> {
    /// One waiting answer.
    struct Pending {
        var waiter: Waiter
        /// The state the answer needs (`nil`: none, answered with the next result).
        var state: ListStateID?
        /// The hub's result was that state, or went past it.
        var reached: Bool
    }

    /// What to do with an answer whose state was reached.
    enum Verdict {
        /// Send it now.
        case answer
        /// Keep it: its subscriber waits for something first (a reset after dropped frames, a resume).
        case wait
        /// Drop it: its subscriber left.
        case drop
    }

    private(set) var waiting: [Pending] = []

    var isEmpty: Bool { waiting.isEmpty }

    /// A `sync` or notice that needs `state`; `reached` when the hub holds it or went past it already.
    mutating func add(_ waiter: Waiter, state: ListStateID?, reached: Bool) {
        waiting.append(Pending(waiter: waiter, state: state, reached: state == nil || reached))
    }

    /// The hub's result moved on from `state`: those waiting for it are reached.
    mutating func passed(_ state: ListStateID) {
        for index in waiting.indices where waiting[index].state == state { waiting[index].reached = true }
    }

    /// The answers due now the hub's result is `current`, in the order asked, taken out; `verdict`
    /// says for each reached one whether to send, keep or drop it (an unreached one whose
    /// subscriber left is dropped too).
    /// - Complexity: O(w) for w answers waiting.
    mutating func due(at current: ListStateID?, _ verdict: (Waiter, _ reached: Bool) -> Verdict) -> [Waiter] {
        var answers: [Waiter] = []
        waiting.removeAll { pending in
            let reached = pending.reached || (pending.state != nil && pending.state == current)
            switch verdict(pending.waiter, reached) {
            case .drop: return true
            case .wait: return false
            case .answer:
                guard reached else { return false }
                answers.append(pending.waiter)
                return true
            }
        }
        return answers
    }
}
