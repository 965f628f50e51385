import Foundation
import ListDiff
import ListTesting
import LiveQueryCore
@testable import LiveQueryPostgres
import Logging
import PostgresNIO
import ScratchPostgres
import Testing

extension PostgresDatabaseTests {
    /// Versions are commit positions, the same for every follower of one database: two live databases
    /// (two slots, as two servers have) agree on the list at every position both know, and commits
    /// that become visible before their WAL is flushed are never shown early.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresPositionTests {
        /// Every result a query delivered, with its position.
        final class Recorder: @unchecked Sendable {
            // `@unchecked Sendable`: `results` is only touched under `lock`.
            private let lock = NSLock()
            private var stored: [(LiveResult<Int64>, PostgresLSN)] = []
            private var task: Task<Void, Never>?

            init(_ query: PostgresLiveQuery<Int64>) {
                let events = query.events
                task = Task { [weak self] in
                    for await event in events {
                        let result: LiveResult<Int64>
                        switch event {
                        case let .initial(initial): result = initial
                        case let .update(update): result = update.result
                        case .failure: continue
                        }
                        guard let position = query.position(of: result) else {
                            Issue.record("a delivered result has no position")
                            continue
                        }
                        self?.lock.withLock { self?.stored.append((result, position)) }
                    }
                }
            }

            var results: [(LiveResult<Int64>, PostgresLSN)] { lock.withLock { stored } }
            func stop() { task?.cancel() }
        }

        static func rows(_ result: LiveResult<Int64>) -> [String] {
            result.rows(in: 0..<result.count).map { "\($0.id):\($0.version)" }
        }

        @Test("two followers of one database agree on the list at every position both hold, and positions only grow")
        func twoFollowersAgree() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE item (id bigint PRIMARY KEY, rank integer, name text COLLATE "C");
                CREATE TABLE other (id bigint PRIMARY KEY);
                INSERT INTO item SELECT g, g % 7, 'n' || g FROM generate_series(1, 30) g;
                """) { configuration, writer, first in
                let second = try await PostgresLiveDatabase.connect(configuration, logger: PG.logger)
                #expect(first.positionsName == second.positionsName && first.positionsName.hasPrefix("pg"))
                let request = PostgresLiveQueryRequest(table: "item", as: Int64.self, filter: "rank < 5", sort: [SortTerm("rank"), SortTerm("name")])
                let a = try await PostgresLiveQuery.open(request, in: first)
                let b = try await PostgresLiveQuery.open(request, in: second)
                let (recordA, recordB) = (Recorder(a), Recorder(b))
                let seed = UInt64.random(in: 0...UInt64.max)
                print("positions seed \(seed)")
                var random = SeededRandomNumberGenerator(seed: seed)
                for step in 0..<40 {
                    let id = Int.random(in: 1...40, using: &random)
                    switch Int.random(in: 0..<5, using: &random) {
                    case 0: try await PG.execute(writer, "INSERT INTO item VALUES (\(id), \(id % 9), 'i\(step)') ON CONFLICT (id) DO UPDATE SET rank = excluded.rank")
                    case 1: try await PG.execute(writer, "DELETE FROM item WHERE id = \(id)")
                    case 2: try await PG.execute(writer, "INSERT INTO other VALUES (\(step))")   // commits that do not touch the query
                    default: try await PG.execute(writer, "UPDATE item SET rank = (rank + \(step)) % 9, name = name || 'x' WHERE id % 5 = \(id % 5)")
                    }
                    // Different rhythms: one follower looks after every commit, the other now and then.
                    _ = try await a.upToDate()
                    if step % 3 == 0 { _ = try await b.upToDate() }
                }
                let resultA = try await a.upToDate()
                let resultB = try await b.upToDate()
                #expect(Self.rows(resultA) == Self.rows(resultB))
                try await Task.sleep(for: .milliseconds(100))
                let (historyA, historyB) = (recordA.results, recordB.results)
                #expect(zip(historyA, historyA.dropFirst()).allSatisfy { $0.1 < $1.1 }, "positions grow")
                var compared = 0
                for (result, position) in historyA {
                    for (other, _) in historyB where b.holds(other, at: position) {
                        #expect(Self.rows(result) == Self.rows(other), "at \(position), seed \(seed)")
                        compared += 1
                    }
                }
                #expect(compared >= historyB.count / 2, "most of the second follower's results are known at the first one's positions")
                // The latest results hold at the latest position of either.
                let latest = max(a.version, b.version)
                #expect(a.holds(a.latestResult, at: latest) && b.holds(b.latestResult, at: latest))
                recordA.stop()
                recordB.stop()
                await second.close()
            }
        }

        @Test("commits made without waiting for their flush (synchronous_commit off) are shown in commit order, each list equal to the SELECT")
        func asynchronousCommits() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE item (id bigint PRIMARY KEY, rank integer);
                INSERT INTO item SELECT g, g FROM generate_series(1, 20) g;
                """) { _, writer, database in
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self, sort: [SortTerm("rank")]), in: database)
                try await PG.execute(writer, "SET synchronous_commit = off")
                for step in 0..<30 {
                    try await PG.execute(writer, "UPDATE item SET rank = rank + \(step * 7 % 23) WHERE id = \(step % 20 + 1)")
                    let result = try await query.upToDate()
                    #expect(PG.ids(result) == (try await PG.int64s(writer, "SELECT id FROM item ORDER BY rank, id")), "step \(step)")
                }
            }
        }
    }
}
