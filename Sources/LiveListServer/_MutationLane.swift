import NIOConcurrencyHelpers

/// A connection's mutations, run one after another in the order they arrived, apart from its
/// other requests (a window moves while a mutation waits for the database). At most `limit`
/// wait; the ones waiting when the connection closes are dropped unrun (their client sends them
/// again), the one running ends.
final class _MutationLane: Sendable {
    typealias Work = @Sendable () async -> Void

    private let state = NIOLockedValueBox((waiting: 0, isClosed: false))
    private let limit: Int
    private let continuation: AsyncStream<Work>.Continuation

    init(limit: Int) {
        self.limit = limit
        let (works, continuation) = AsyncStream<Work>.makeStream()
        self.continuation = continuation
        // Ends when the stream does (``close()``).
        Task {
            for await work in works { await work() }
        }
    }

    /// Queues `work`; `false` (not queued) when `limit` wait already or the lane is closed.
    func enqueue(_ work: @escaping Work) -> Bool {
        let admitted = state.withLockedValue { state -> Bool in
            guard !state.isClosed, state.waiting < limit else { return false }
            state.waiting += 1
            return true
        }
        guard admitted else { return false }
        continuation.yield { [self] in
            let run = state.withLockedValue { state -> Bool in
                state.waiting -= 1
                return !state.isClosed
            }
            if run { await work() }
        }
        return true
    }

    /// Drops the waiting mutations; the running one ends.
    func close() {
        state.withLockedValue { $0.isClosed = true }
        continuation.finish()
    }
}
