import ListDiff

/// What every live query of a server keeps for resuming clients, in all: changesets and their
/// bytes (see `HubState.Buffered`). Shown by `GET …/health`, so an operator — and a test or a
/// benchmark — sees what resume costs.
package final class ResumeGauge: Sendable {
    private let counts = Locked((changesets: 0, bytes: 0))

    /// Adds `changesets` kept (negative: dropped) holding `bytes`.
    func add(changesets: Int, bytes: Int) {
        counts.withLock { counts in
            counts.changesets += changesets
            counts.bytes += bytes
        }
    }

    /// The changesets kept, and their bytes, now.
    package var current: (changesets: Int, bytes: Int) {
        counts.withLock { $0 }
    }
}
