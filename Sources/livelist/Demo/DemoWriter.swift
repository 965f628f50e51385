import Foundation
import GRDB
import ListTesting

/// Makes live changes to the inbox at a steady rate, with a burst every tenth tick.
final class DemoWriter: @unchecked Sendable {
    private let lock = NSLock()
    private var paused = false
    private var task: Task<Void, Never>?
    private var written = 0

    var isPaused: Bool {
        get { lock.withLock { paused } }
        set { lock.withLock { paused = newValue } }
    }

    var rowsWritten: Int { lock.withLock { written } }

    func start(database: DatabaseQueue, writesPerSecond: Int, seed: UInt64) {
        let perTick = max(1, writesPerSecond / 10)
        task = Task.detached { [weak self] in
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
                self.lock.withLock { self.written += touched }
            }
        }
    }

    /// Stops writing and waits for the write in flight.
    func stop() async {
        task?.cancel()
        await task?.value
    }
}
