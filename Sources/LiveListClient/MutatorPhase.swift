/// Where a ``RemoteMutator`` stands, as one value: stopped, or started — and then whether it waits
/// to send its mutations again after the server said it was busy (`mutationUnavailable`), and
/// how many busy answers came in a row (each waits longer: 200 ms, doubling up to 5 s). Events in,
/// the delay out; the mutator sleeps and sends. Tested without I/O.
struct MutatorPhase: Equatable {
    enum State: Equatable {
        case stopped
        /// Sending as mutations come; `busyInARow` busy answers since the last applied one.
        case started(busyInARow: Int)
        /// A resend waits for its delay.
        case waitingToResend(busyInARow: Int)
    }

    private(set) var state = State.stopped

    /// Whether it is on its session.
    var isStarted: Bool { state != .stopped }

    /// Starts; `false` when it was started already.
    mutating func start() -> Bool {
        guard state == .stopped else { return false }
        state = .started(busyInARow: 0)
        return true
    }

    mutating func stop() {
        state = .stopped
    }

    /// The server was busy: how long to wait before sending every pending mutation again, or
    /// `nil` when a resend waits already (or the mutator is stopped).
    mutating func busy() -> Duration? {
        guard case let .started(count) = state else { return nil }
        state = .waitingToResend(busyInARow: count + 1)
        return .milliseconds(min(5_000, 100 << min(count + 1, 6)))
    }

    /// The delay ran out: `true` when the mutations are to be sent again now.
    mutating func resendDue() -> Bool {
        guard case let .waitingToResend(count) = state else { return false }
        state = .started(busyInARow: count)
        return true
    }

    /// A mutation was applied: the busy answers in a row are over.
    mutating func applied() {
        switch state {
        case .started: state = .started(busyInARow: 0)
        case .waitingToResend: state = .waitingToResend(busyInARow: 0)
        case .stopped: break
        }
    }
}
