import Foundation
import GRDB
import ListDiff
import ListTesting

/// Makes live changes to the inbox at a steady rate, with a burst every tenth tick.
final class DemoWriter: Sendable {
    private struct State {
        var paused = false
        var task: Task<Void, Never>?
        var written = 0
    }

    private let state = Locked(State())

    var isPaused: Bool {
        get { state.withLock { $0.paused } }
        set { state.withLock { $0.paused = newValue } }
    }

    var rowsWritten: Int { state.withLock { $0.written } }

    func start(database: DatabaseQueue, writesPerSecond: Int, seed: UInt64) {
        let perTick = max(1, writesPerSecond / 10)
        let task = Task.detached { [weak self] in
            var random = SeededRandomNumberGenerator(seed: seed &+ 1)
            var tick = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                guard let self, !Task.isCancelled else { return }
                if self.isPaused { continue }
                tick += 1
                let count = tick % 10 == 0 ? perTick * 20 : perTick
                let seedForTick = random.next()
                let touched = (try? await database.write { db in
                    var random = SeededRandomNumberGenerator(seed: seedForTick)
                    return try InboxDatabase.write(db, count: count, random: &random)
                }) ?? 0
                self.state.withLock { $0.written += touched }
            }
        }
        state.withLock { $0.task = task }
    }

    /// Stops writing and waits for the write in flight.
    func stop() async {
        let task = state.withLock { $0.task }
        task?.cancel()
        await task?.value
    }
}
