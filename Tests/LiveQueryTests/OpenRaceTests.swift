import Foundation
import GRDB
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// The other connection of ``OpenRaceTests``: commits one row at a time, on a thread of its own,
/// until stopped; counts its commits.
final class BackgroundWriter: Sendable {
    /// `@unchecked Sendable`: `value` is only touched under `lock`.
    final class RaceBox: @unchecked Sendable {
        private let lock = NSLock()
        private var value: (running: Bool, paused: Bool, idle: Bool, commits: Int) = (true, false, false, 0)
        func withLock<T>(_ body: (inout (running: Bool, paused: Bool, idle: Bool, commits: Int)) -> T) -> T { lock.withLock { body(&value) } }
    }

    private let state = RaceBox()
    private let done = DispatchSemaphore(value: 0)

    init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let other = try DatabaseQueue(path: path, configuration: configuration)
        let thread = Thread { [state, done] in
            var step: Int64 = 0
            while state.withLock({ $0.running }) {
                // Paused: says so (no commit of its is in flight), and waits.
                if state.withLock({ $0.idle = $0.paused; return $0.paused }) {
                    usleep(200)
                    continue
                }
                step += 1
                do {
                    try other.write { db in
                        // Moves one row across the list and changes another's membership.
                        try db.execute(sql: "UPDATE item SET rank = (rank * 7 + 13) % 1000 WHERE id = ?", arguments: [step % 2_000 + 1])
                        try db.execute(sql: "UPDATE item SET flag = 1 - flag WHERE id = ?", arguments: [(step * 31) % 2_000 + 1])
                    }
                    state.withLock { $0.commits += 1 }
                    // A moment between commits, as a real writer leaves: SQLite's busy handler sleeps, so a
                    // writer that never pauses keeps the lock from the query's own writes for seconds.
                    usleep(300)
                } catch {
                    Issue.record("the other connection's write failed: \(error)")
                    break
                }
            }
            done.signal()
        }
        thread.start()
    }

    var commits: Int { state.withLock { $0.commits } }

    /// Stops committing: returns once no commit is in flight.
    func pause() async throws {
        state.withLock { $0.paused = true }
        while !state.withLock({ $0.idle }) { try await Task.sleep(for: .milliseconds(1)) }
    }

    func resume() { state.withLock { $0.paused = false; $0.idle = false } }

    func stop() {
        state.withLock { $0.running = false }
        done.wait()
    }
}

/// Another connection commits while a query opens or changes its request: the query's fetch and
/// the point from which it looks for other connections' commits (the change log's end, `PRAGMA
/// data_version`) must describe one state — read after the fetch, a commit that falls between
/// the two is never shown.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct OpenRaceTests {
    /// 2,000 rows in a file, `flag` splitting them in two, with the change log or without.
    static func items(changeLog: Bool) async throws -> (DatabasePool, String) {
        let path = try TestDatabase.path()
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let pool = try DatabasePool(path: path, configuration: configuration)
        try await pool.write { db in
            try db.execute(sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, rank INTEGER NOT NULL, flag INTEGER NOT NULL)")
            for id in 1...2_000 { try db.execute(sql: "INSERT INTO item VALUES (?, ?, ?)", arguments: [id, (id * 37) % 1_000, id % 2]) }
            if changeLog { try ChangeTracking.install(on: db, tables: ["item"]) }
        }
        return (pool, path)
    }

    /// Whether `result` lists exactly `expected`; records where it first differs.
    static func expectEqual(_ result: LiveResult<Int64>, _ expected: [Int64], _ what: String) -> Bool {
        let shown = result.rows(in: 0..<result.count).map(\.id)
        let difference = zip(shown, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(shown.count, expected.count)
        let equal = shown.elementsEqual(expected)
        #expect(equal, "\(what): \(shown.count) rows shown, \(expected.count) selected, first difference at \(difference)")
        return equal
    }

    @Test("a query opened while another connection commits shows every commit: none falls between its first fetch and where it starts looking",
          arguments: [(changeLog: true, firstScreen: false), (changeLog: true, firstScreen: true),
                      (changeLog: false, firstScreen: false), (changeLog: false, firstScreen: true)])
    func openWhileAnotherConnectionCommits(changeLog: Bool, firstScreen: Bool) async throws {
        let (pool, path) = try await Self.items(changeLog: changeLog)
        let writer = try BackgroundWriter(path: path)
        defer { writer.stop() }
        let request = LiveQueryRequest(table: "item", filter: .init("flag = 1"), sort: [SortTerm("rank"), SortTerm("id")])
        let options = LiveQueryOptions(dataVersionPollInterval: nil, firstScreenRows: firstScreen ? 50 : nil, followsChangeLog: changeLog,
                                       watchesFiles: false, wholeResultRows: firstScreen ? 10 : 25_000)
        for attempt in 0..<40 {
            let before = writer.commits
            let query = try await LiveQuery.open(request, in: pool, options: options)
            defer { query.cancel() }
            // Let commits land after the open too, then look from a quiet database.
            while writer.commits < before + 3 { try await Task.sleep(for: .milliseconds(1)) }
            try await withTimeLimit { try await writer.pause() }
            let result = try await withTimeLimit { try await query.upToDate() }
            let expected = try await pool.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM item WHERE flag = 1 ORDER BY rank, id") }
            writer.resume()
            guard Self.expectEqual(result, expected, "attempt \(attempt)") else { break }
        }
    }

    @Test("a new filter set while another connection commits misses none of its commits", arguments: [true, false])
    func setRequestWhileAnotherConnectionCommits(changeLog: Bool) async throws {
        let (pool, path) = try await Self.items(changeLog: changeLog)
        let writer = try BackgroundWriter(path: path)
        defer { writer.stop() }
        func request(_ flag: Int) -> LiveQueryRequest<Int64> {
            LiveQueryRequest(table: "item", filter: .init("flag = ?", arguments: [flag]), sort: [SortTerm("rank"), SortTerm("id")])
        }
        let options = LiveQueryOptions(dataVersionPollInterval: nil, followsChangeLog: changeLog, watchesFiles: false)
        let query = try await LiveQuery.open(request(1), in: pool, options: options)
        defer { query.cancel() }
        for attempt in 0..<40 {
            let flag = attempt % 2
            let before = writer.commits
            try await query.setRequest(request(flag))
            while writer.commits < before + 3 { try await Task.sleep(for: .milliseconds(1)) }
            try await withTimeLimit { try await writer.pause() }
            let result = try await withTimeLimit { try await query.upToDate() }
            let expected = try await pool.read { db in
                try Int64.fetchAll(db, sql: "SELECT id FROM item WHERE flag = ? ORDER BY rank, id", arguments: [flag])
            }
            writer.resume()
            guard Self.expectEqual(result, expected, "attempt \(attempt)") else { break }
        }
    }
}
