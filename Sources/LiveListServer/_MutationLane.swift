import Foundation

/// A connection's mutations, run one after another in the order they arrived, apart from its
/// other requests (a window moves while a mutation waits for the database). At most `limit`
/// wait; the ones waiting when the connection closes are dropped unrun (their client sends them
/// again), the one running ends.
///
/// `@unchecked Sendable`: `waiting` and `isClosed` are read and written under `lock` only.
final class _MutationLane: @unchecked Sendable {
    typealias Work = @Sendable () async -> Void

    private let lock = NSLock()
    private var waiting = 0
    private var isClosed = false
    private let limit: Int
    private let continuation: AsyncStream<Work>.Continuation
    private let runner: Task<Void, Never>

    init(limit: Int) {
        self.limit = limit
        let (works, continuation) = AsyncStream<Work>.makeStream()
        self.continuation = continuation
        runner = Task {
            for await work in works { await work() }
        }
    }

    /// Queues `work`; `false` (not queued) when `limit` wait already or the lane is closed.
    func enqueue(_ work: @escaping Work) -> Bool {
        let admitted = lock.withLock { () -> Bool in
            guard !isClosed, waiting < limit else { return false }
            waiting += 1
            return true
        }
        guard admitted else { return false }
        continuation.yield { [self] in
            let run = lock.withLock { () -> Bool in
                waiting -= 1
                return !isClosed
            }
            if run { await work() }
        }
        return true
    }

    /// Drops the waiting mutations; the running one ends.
    func close() {
        lock.withLock { isClosed = true }
        continuation.finish()
    }
}
