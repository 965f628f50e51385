import ListDiff
import LiveListWire

/// What answers a `sync` once the subscriber was sent the result of its state: the `synced`
/// message a client asked for, or a notice to the connection (a mutation's `mutated` waits for
/// each of its subscriptions).
enum SyncReply: Sendable {
    case synced(id: Int)
    case notice(VersionNotice)
}

/// The version a subscription holds once it was sent a state, handed to one waiter once.
/// Dropped unanswered (the subscriber left, the hub stopped, the input was never read), it
/// answers `nil`, so a waiter never waits for an input that is gone. The continuation is taken
/// under the box's lock, so it is resumed once.
final class VersionNotice: Sendable {
    private let continuation: Locked<CheckedContinuation<WireVersion?, Never>?>

    /// Waits for the notice made by `send` to be answered (or dropped).
    static func wait(_ send: (VersionNotice) -> Void) async -> WireVersion? {
        await withCheckedContinuation { continuation in
            send(VersionNotice(continuation))
        }
    }

    private init(_ continuation: CheckedContinuation<WireVersion?, Never>) {
        self.continuation = Locked(continuation)
    }

    /// Answers the waiter with the version the subscription holds (`nil`: it holds none).
    func answer(_ version: WireVersion?) {
        continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }?.resume(returning: version)
    }

    deinit { answer(nil) }
}
