import Foundation

/// Whether an attempt's opening handshake was answered before it was given up: exactly one of
/// the two wins.
///
/// `@unchecked Sendable`: `state` is read and written under `lock` only.
final class _Handshake: @unchecked Sendable {
    private enum State { case waiting, open, givenUp }
    private let lock = NSLock()
    private var state = State.waiting

    /// The handshake was answered: `true` unless the attempt was given up first.
    func open() -> Bool {
        lock.withLock {
            guard state == .waiting else { return state == .open }
            state = .open
            return true
        }
    }

    /// Gives the attempt up: `true` when its handshake had not been answered.
    func giveUp() -> Bool {
        lock.withLock {
            guard state == .waiting else { return false }
            state = .givenUp
            return true
        }
    }
}
