import Foundation

/// Wake-ups for the poller: a notification from a table's trigger (or a lost listening
/// connection) ends the poller's wait at once. Signals that come while nobody waits are kept as
/// one, so a burst of commits costs one round, not one per commit.
///
/// `@unchecked Sendable`: `pending`, `waiter` and `finished` are only touched under `lock`.
final class _WakeSignals: @unchecked Sendable {
    private let lock = NSLock()
    private var pending = false
    private var waiter: CheckedContinuation<Void, Never>?
    private var finished = false

    func signal() {
        let waiter: CheckedContinuation<Void, Never>? = lock.withLock {
            guard let waiting = self.waiter else {
                pending = true
                return nil
            }
            self.waiter = nil
            return waiting
        }
        waiter?.resume()
    }

    /// Returns at the next signal (at once if one came since the last wait), or after `timeout`.
    func wait(timeout: Duration) async {
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.signal()
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready: Bool = lock.withLock {
                    if pending || finished {
                        pending = false
                        return true
                    }
                    waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
    }

    func finish() {
        lock.withLock { finished = true }
        signal()
    }
}
