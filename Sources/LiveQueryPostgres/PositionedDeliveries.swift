import ListDiff

/// What the results one query delivers stand for, as one value: the positions each delivered result
/// holds at (``positions``), and — only while the runner has its tracker deliver — what the result
/// about to be delivered stands for (a step of commits, or a result read whole) and whether one
/// came. Events in: a delivery opens (``open(_:shown:)``), the tracker delivers a result
/// (``delivered(_:)``, from the channel's tap, before anyone sees it), the delivery closes
/// (``close()``); out: the position each result goes out with, and what the delivery came to. No
/// lock, no I/O: `PostgresQueryRunner` holds it under its lock and sends the positioned events.
struct PositionedDeliveries {
    /// What the result a delivery brings stands for.
    enum StandsFor: Equatable {
        /// The result after a step of commits, the first and last of which end at these positions.
        case step(first: UInt64, last: UInt64)
        /// A result read whole, which holds from this position.
        case read(from: UInt64)
    }

    /// What a delivery came to.
    enum Outcome: Equatable {
        /// The tracker delivered a new result (at this position; `nil`: a result without a state).
        case delivered(at: UInt64?)
        /// No new result: the one shown stands at this position (a step's last commit's end, or
        /// where a result read whole holds from) — an `unchanged` event to send.
        case unchanged(through: UInt64)
        /// No new result, and none known to stand (after a failure, or before the whole result).
        case nothing
    }

    /// A delivery under way.
    private struct Delivery {
        var standsFor: StandsFor
        /// The state of the result shown when it opened (a result read whole that comes back as
        /// that one holds again).
        var shown: ListStateID?
        /// The tracker's delivery since, if any: the position of the result it delivered last.
        var came: Came = .waiting
    }

    private enum Came {
        case waiting
        case result(at: UInt64?)
    }

    /// Which positions each delivered result holds at.
    var positions: ResultPositions
    private var delivery: Delivery?

    init(positions: ResultPositions = ResultPositions()) {
        self.positions = positions
    }

    /// Whether a delivery is under way.
    var isDelivering: Bool { delivery != nil }

    /// The tracker is about to deliver a result that stands for `standsFor`; `shown`: the state of
    /// the result shown now.
    mutating func open(_ standsFor: StandsFor, shown: ListStateID? = nil) {
        delivery = Delivery(standsFor: standsFor, shown: shown)
    }

    /// The tracker delivered a result whose state is `state`: it is recorded at the position it
    /// stands for, which is returned — `nil` outside a delivery, or for a result without a state.
    mutating func delivered(_ state: ListStateID?) -> UInt64? {
        guard var delivery else { return nil }
        defer { self.delivery = delivery }
        guard let state else {
            delivery.came = .result(at: nil)
            return nil
        }
        let position: UInt64
        switch delivery.standsFor {
        case let .step(first, last):
            positions.stepped(to: state, first: first, last: last)
            position = last
        case let .read(start):
            positions.read(state, from: start)
            position = start
        }
        delivery.came = .result(at: position)
        return position
    }

    /// The delivery is over: what it came to. A step that delivered nothing leaves the current
    /// result standing at its last commit; a result read whole that came back as the one shown
    /// holds from where the read holds.
    mutating func close() -> Outcome {
        guard let delivery else { return .nothing }
        self.delivery = nil
        if case let .result(position) = delivery.came { return .delivered(at: position) }
        switch delivery.standsFor {
        case let .step(first, last):
            return unchanged(first: first, last: last) ? .unchanged(through: last) : .nothing
        case let .read(from):
            guard let shown = delivery.shown else { return .nothing }
            positions.read(shown, from: from)
            return .unchanged(through: from)
        }
    }

    /// A step of commits (the first ends at `first`, the last at `last`) left the result as it
    /// was: `true` when the current result is known, and then stands again from `last`.
    mutating func unchanged(first: UInt64, last: UInt64) -> Bool {
        guard let state = positions.current else { return false }
        positions.stepped(to: state, first: first, last: last)
        return true
    }
}
