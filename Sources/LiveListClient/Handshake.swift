import ListDiff

/// Whether an attempt's opening handshake was answered before it was given up: exactly one of
/// the two wins.
final class Handshake: Sendable {
    private enum State { case waiting, open, givenUp }
    private let state = Locked(State.waiting)

    /// The handshake was answered: `true` unless the attempt was given up first.
    func open() -> Bool { settle(as: .open) }

    /// Gives the attempt up: `true` when its handshake had not been answered.
    func giveUp() -> Bool { settle(as: .givenUp) }

    private func settle(as outcome: State) -> Bool {
        state.withLock { state in
            guard state == .waiting else { return false }
            state = outcome
            return true
        }
    }
}
