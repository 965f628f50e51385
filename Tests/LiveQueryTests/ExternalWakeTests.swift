import Foundation
import GRDB
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// Another connection's commit wakes a live query through the file watcher alone (no poll): no
/// commit may wait for the next one to be seen — not one published after the look its writes
/// woke, not one made while the query read the rest of its first fetch.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ExternalWakeTests {
    @Test("after a file event, looks go on at growing delays for about a second, whatever a look found")
    func recheckSchedule() {
        let delays = (0..<20).compactMap { RecheckSchedule.delay(after: $0) }
        #expect(delays.count == RecheckSchedule.delays.count)
        #expect(delays.first.map { $0 < .milliseconds(1) } ?? false, "the first look again comes at once")
        #expect(zip(delays, delays.dropFirst()).allSatisfy { $0 <= $1 }, "\(delays)")
        // A writer preempted between writing its commit and publishing it, for a scheduler slice
        // or a few on a loaded machine, is still seen: looks go on for a second.
        #expect(RecheckSchedule.horizon >= .seconds(1))
        #expect(RecheckSchedule.delay(after: -1) == nil && RecheckSchedule.delay(after: delays.count) == nil)
    }

    /// Runs `busy` threads that spin until `stop` is set: a loaded machine.
    final class CPUHog: @unchecked Sendable {
        // `@unchecked Sendable`: `running` is only read and written under `lock`.
        private let lock = NSLock()
        private var running = true
        init(threads: Int) {
            for _ in 0..<threads {
                Thread { [self] in
                    var spin: UInt64 = 0
                    while lock.withLock({ running }) {
                        for _ in 0..<100_000 { spin &+= 1 }
                    }
                    _ = spin
                }.start()
            }
        }
        func stop() { lock.withLock { running = false } }
    }

    @Test("with no poll, under a CPU hog, each of 30 commits by another connection is seen, one after the other, and one made while the first fetch is read too")
    func everyCommitWakesTheQuery() async throws {
        let path = try TestDatabase.path()
        let pool = try DatabasePool(path: path, configuration: TestDatabase.patient)
        try await pool.write { db in
            try db.execute(sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, rank INTEGER NOT NULL)")
            let statement = try db.makeStatement(sql: "INSERT INTO item(id, rank) VALUES (?, ?)")
            for id in 1...30_000 { try statement.execute(arguments: [id, id]) }
            // The change log: each commit is applied row by row, so the test's work is the waking.
            try ChangeTracking.install(on: db, tables: ["item"])
        }
        let other = try DatabaseQueue(path: path, configuration: TestDatabase.patient)
        let hog = CPUHog(threads: 2)
        defer { hog.stop() }
        let request = LiveQueryRequest<Int64>(table: "item", sort: [SortTerm("rank"), SortTerm("id")])
        // No poll: the file watcher is all that wakes the query. 30,000 rows: it opens with a first
        // screen and reads the rest meanwhile.
        let options = LiveQueryOptions(dataVersionPollInterval: nil, firstScreenRows: 50)
        let query = try await LiveQuery.open(request, in: pool, options: options, callbackQueue: nil)
        defer { query.cancel() }
        let whileBuilding = !query.latestResult.isComplete
        try await other.write { db in try db.execute(sql: "UPDATE item SET rank = -1 WHERE id = 29999") }
        /// Whether the row `id` is shown first within 10 s.
        func shownFirst(_ id: Int64) async throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                let result = query.latestResult
                if result.isComplete, result.row(at: 0)?.id == id { return true }
                try await Task.sleep(for: .milliseconds(5))
            }
            return false
        }
        #expect(try await shownFirst(29_999), "the commit made while the rest was read (\(whileBuilding ? "it was" : "it was not"))")
        for step in 1...30 {
            let id = Int64(step * 1_000)
            try await other.write { db in try db.execute(sql: "UPDATE item SET rank = ? WHERE id = ?", arguments: [-1 - step, id]) }
            let seen = try await shownFirst(id)
            #expect(seen, "commit \(step) was not seen within 10 s")
            if !seen { return }
        }
    }
}
