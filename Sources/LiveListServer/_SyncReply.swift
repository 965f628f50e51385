import Foundation
import LiveListWire

/// What answers a `sync` once the subscriber was sent the result of its state: the `synced`
/// message a client asked for, or a notice to the connection (a mutation's `mutated` waits for
/// each of its subscriptions).
enum _SyncReply: Sendable {
    case synced(id: Int)
    case notice(_VersionNotice)
}

/// The version a subscription holds once it was sent a state, handed to one waiter once.
/// Dropped unanswered (the subscriber left, the hub stopped, the input was never read), it
/// answers `nil`, so a waiter never waits for an input that is gone.
///
/// `@unchecked Sendable`: `continuation` is read and cleared under `lock` only, so it is resumed
/// once.
final class _VersionNotice: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<WireVersion?, Never>?

    /// Waits for the notice made by `send` to be answered (or dropped).
    static func wait(_ send: (_VersionNotice) -> Void) async -> WireVersion? {
        await withCheckedContinuation { continuation in
            send(_VersionNotice(continuation))
        }
    }

    private init(_ continuation: CheckedContinuation<WireVersion?, Never>) {
        self.continuation = continuation
    }

    /// Answers the waiter with the version the subscription holds (`nil`: it holds none).
    func answer(_ version: WireVersion?) {
        lock.withLock { () -> CheckedContinuation<WireVersion?, Never>? in
            defer { continuation = nil }
            return continuation
        }?.resume(returning: version)
    }

    deinit { continuation?.resume(returning: nil) }
}
