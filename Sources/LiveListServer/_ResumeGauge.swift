import Foundation

/// What every live query of a server keeps for resuming clients, in all: changesets and their
/// bytes (see `_HubLoop.Buffered`). Shown by `GET …/health`, so an operator — and a test or a
/// benchmark — sees what resume costs.
///
/// `@unchecked Sendable`: `changesets` and `bytes` are read and written under `lock` only.
package final class _ResumeGauge: @unchecked Sendable {
    private let lock = NSLock()
    private var changesets = 0
    private var bytes = 0

    /// Adds `changesets` kept (negative: dropped) holding `bytes`.
    func add(changesets: Int, bytes: Int) {
        lock.withLock {
            self.changesets += changesets
            self.bytes += bytes
        }
    }

    package var current: (changesets: Int, bytes: Int) {
        lock.withLock { (changesets, bytes) }
    }
}
