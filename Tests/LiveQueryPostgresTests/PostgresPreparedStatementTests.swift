import Foundation
import ListTesting
import LiveQueryCore
@testable import LiveQueryPostgres
import PostgresNIO
import ScratchPostgres
import Testing

/// Which of a connection's statements are prepared, without a database.
@Suite struct PreparedStatementCacheTests {
    typealias Cache = PreparedStatementCache<String, Int>

    @Test("a statement is prepared once: runs wait for its prepare, then run the handle it gave")
    func preparedOnce() {
        var cache = Cache(capacity: 4)
        guard case .prepare = cache.use("A", waiter: 1) else { Issue.record("the first use prepares"); return }
        guard case .wait = cache.use("A", waiter: 2) else { Issue.record("a use during the prepare waits"); return }
        guard case .wait = cache.use("A", waiter: 3) else { Issue.record("a use during the prepare waits"); return }
        let (waiters, evicted) = cache.prepared("A", as: "a")
        #expect(waiters == [2, 3] && evicted.isEmpty)
        guard case let .run(handle, generation) = cache.use("A", waiter: 4) else { Issue.record("a prepared statement runs"); return }
        #expect(handle == "a" && generation == 1 && cache.count == 1)
    }

    @Test("a failed prepare fails its waiters and is tried again; an outdated statement is let go once, and the one prepared since stays")
    func failedAndDiscarded() {
        var cache = Cache(capacity: 4)
        _ = cache.use("A", waiter: 1)
        _ = cache.use("A", waiter: 2)
        #expect(cache.failed("A") == [2])
        guard case .prepare = cache.use("A", waiter: 3) else { Issue.record("prepared again after a failure"); return }
        _ = cache.prepared("A", as: "a1")
        guard case let .run(_, first) = cache.use("A", waiter: 0) else { Issue.record("a1 runs"); return }
        #expect(cache.discard("A", generation: first) == "a1")
        #expect(cache.discard("A", generation: first) == nil)
        guard case .prepare = cache.use("A", waiter: 4) else { Issue.record("prepared again after it was let go"); return }
        // A prepare under way is not let go: nothing to close yet.
        #expect(cache.discard("A", generation: first) == nil)
        #expect(cache.prepared("A", as: "a2").waiters.isEmpty)
        // A second run of a1 that finds it outdated late does not let the new one go.
        #expect(cache.discard("A", generation: first) == nil)
        guard case let .run(handle, second) = cache.use("A", waiter: 5) else { Issue.record("a2 runs"); return }
        #expect(handle == "a2" && second != first)
    }

    @Test("statements the server lost are all let go; one being prepared stays")
    func allLost() {
        var cache = Cache(capacity: 4)
        for (sql, handle) in [("A", "a"), ("B", "b")] {
            _ = cache.use(sql, waiter: 0)
            _ = cache.prepared(sql, as: handle)
        }
        _ = cache.use("C", waiter: 0)
        #expect(cache.discardAll().sorted() == ["a", "b"])
        #expect(cache.count == 1)
        guard case .prepare = cache.use("A", waiter: 0) else { Issue.record("A is prepared again"); return }
        #expect(cache.prepared("C", as: "c").evicted.isEmpty)
    }

    @Test("beyond capacity the least recently used ready statements go, never one being prepared nor the one just prepared")
    func leastRecentlyUsedGo() {
        var cache = Cache(capacity: 2)
        for (sql, handle) in [("A", "a"), ("B", "b")] {
            _ = cache.use(sql, waiter: 0)
            #expect(cache.prepared(sql, as: handle).evicted.isEmpty)
        }
        _ = cache.use("A", waiter: 0)  // A is now used more recently than B.
        _ = cache.use("C", waiter: 0)  // Being prepared: three entries, none let go yet.
        _ = cache.use("D", waiter: 0)
        #expect(cache.count == 4)
        // C ready: the least recently used ready ones go until two are left (B, then A); D is being prepared.
        #expect(cache.prepared("C", as: "c").evicted == ["b", "a"])
        #expect(cache.count == 2)
        #expect(cache.prepared("D", as: "d").evicted.isEmpty)
        guard case let .run(handle, _) = cache.use("D", waiter: 0) else { Issue.record("D stays"); return }
        #expect(handle == "d")
        guard case .prepare = cache.use("B", waiter: 0) else { Issue.record("B was let go"); return }
        // B ready: three, so the least recently used other, C, goes.
        #expect(cache.prepared("B", as: "b2").evicted == ["c"])
    }
}

extension PostgresDatabaseTests {
    /// A round's re-reads and lookups run as statements prepared once on its connection.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresPreparedStatementTests {
        @Test("a round's statements are prepared once, not on every commit, and every list equals its SELECT")
        func preparedOnce() async throws {
            try await PostgresBehaviourTests.withDatabase(PostgresSQLTests.schema) { _, writer, database in
                let shapes: [(String, [[SQLValue]])] = [
                    ("SELECT m.id, m.subject FROM message m WHERE m.contact_id = $1 ORDER BY m.subject, m.id", (1...3).map { [.integer(Int64($0))] }),
                    ("SELECT m.id, c.name AS sender, m.subject FROM message m JOIN contact c ON c.id = m.contact_id ORDER BY c.name, m.id", [[]]),
                    ("SELECT c.id, c.name, count(m.id) AS n FROM contact c LEFT JOIN message m ON m.contact_id = c.id GROUP BY c.id ORDER BY c.name, c.id", [[]]),
                ]
                var queries: [(String, PostgresLiveQuery<Int64>)] = []
                for (sql, sets) in shapes {
                    for values in sets {
                        let query = try await PostgresLiveQuery.open(PostgresBatchTests.request(sql, values), in: database)
                        queries.append((PostgresBatchTests.literal(sql, values), query))
                    }
                }
                try await PostgresBatchTests.randomCommits(queries, writer, steps: 40, label: "prepared-once")
                let rounds = await database.engine.snapshotsTaken
                // Each statement is prepared once: a batch per size (padded to a power of two), a
                // re-read, a lookup per joined table and its groups: a handful, whatever the commits.
                let prepared = await database.engine.statementsPrepared
                let diagnostics = await database.engine.diagnostics
                #expect(rounds >= 20, "\(diagnostics)")
                #expect(prepared.prepares > 0 && prepared.prepares <= 16, "\(diagnostics)")
            }
        }

        @Test("a prepared re-read that PostgreSQL refuses reports the server's message and SQLSTATE as the query's failure")
        func refusedWithItsState() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE t (id bigint PRIMARY KEY, x bigint NOT NULL, label text COLLATE "C");
                INSERT INTO t SELECT g, g % 4, 'l' || g FROM generate_series(1, 20) g;
                """) { _, writer, database in
                let query = try await PostgresLiveQuery.open(
                    PostgresBatchTests.request("SELECT id, label FROM t WHERE 100 / (x - 11) <> 0 ORDER BY label, id", []), in: database)
                let follower = await PostgresListFollower(query)
                // A re-read first, so that the statement is prepared before it fails.
                try await PG.execute(writer, "UPDATE t SET label = 'first' WHERE id = 2")
                _ = try await query.upToDate()
                try await PG.execute(writer, "UPDATE t SET x = 11 WHERE id = 3")
                try await within("the query's failure", seconds: 10) {
                    while await MainActor.run(body: { follower.failures.isEmpty }) { try await Task.sleep(for: .milliseconds(20)) }
                }
                let failure = try #require(await MainActor.run { follower.failures.first })
                #expect(failure.postgresError?.sqlState == "22012", "\(failure)")
                guard case let .refused(refused, _)? = failure.postgresError, !refused.isOutdated else {
                    Issue.record("a prepared statement's refusal: \(String(describing: failure.postgresError))")
                    return
                }
                #expect(await database.engine.statementsPrepared.prepares > 0)
                await follower.stop()
            }
        }

        @Test("columns added and dropped under prepared statements that read *, statements the server lost: prepared again, no query fails, every list equals its SELECT")
        func outdatedAfterAlter() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE t (id bigint PRIMARY KEY, g bigint NOT NULL, label text COLLATE "C" NOT NULL);
                INSERT INTO t SELECT n, n % 3, 'l' || n FROM generate_series(1, 30) n;
                """) { _, writer, database in
                // `*`: the statements' result columns follow the table's. Three argument sets read
                // in one batch statement, one query on its own re-read.
                let grouped = "SELECT * FROM t WHERE g = $1 ORDER BY label, id"
                var queries: [(String, PostgresLiveQuery<Int64>, PostgresListFollower<Int64>)] = []
                for g in Int64(0)..<3 {
                    let query = try await PostgresLiveQuery.open(PostgresBatchTests.request(grouped, [.integer(g)]), in: database)
                    queries.append((PostgresBatchTests.literal(grouped, [.integer(g)]), query, await PostgresListFollower(query)))
                }
                let whole = "SELECT * FROM t WHERE id > 0 ORDER BY label, id"
                let query = try await PostgresLiveQuery.open(PostgresBatchTests.request(whole, []), in: database)
                queries.append((whole, query, await PostgresListFollower(query)))
                for (_, query, _) in queries { #expect(query.mode == .incremental) }
                let seed = SeededRandomNumberGenerator.testSeed("PostgreSQL outdated-prepared")
                var random = SeededRandomNumberGenerator(seed: seed)
                var outdatedBefore = 0
                for step in 0..<26 {
                    switch step {
                    case 8: try await PG.execute(writer, "ALTER TABLE t ADD COLUMN extra text DEFAULT 'e'")
                    case 16: try await PG.execute(writer, "ALTER TABLE t DROP COLUMN extra")
                    case 20:
                        // The server loses them all, as behind a pooler that runs DISCARD ALL.
                        outdatedBefore = await database.engine.statementsPrepared.outdated
                        try await #require(await database.engine.reader).execute("DEALLOCATE ALL")
                    case 22:
                        // And again: as behind a pooler that hands each round to another server
                        // process. The statements are sent as text from then on.
                        #expect(await database.engine.reader?.prepared.preparing == true)
                        try await #require(await database.engine.reader).execute("DEALLOCATE ALL")
                    default: break
                    }
                    // Rows re-read through the statements prepared before the change.
                    let id = Int64.random(in: 1...30, using: &random)
                    try await PG.execute(writer, "UPDATE t SET label = 'l\(Int.random(in: 0...99, using: &random))', g = \(Int.random(in: 0...2, using: &random)) WHERE id = \(id)")
                    for (sql, query, follower) in queries {
                        try await PostgresBatchTests.expectExact(query, follower, sql, writer, columns: 1, step: step, seed: seed)
                    }
                }
                let prepared = await database.engine.statementsPrepared
                let diagnostics = await database.engine.diagnostics
                #expect(outdatedBefore > 0, "the statements prepared before the columns changed were let go: \(diagnostics)")
                #expect(prepared.outdated > outdatedBefore, "the statements the server lost were let go: \(diagnostics)")
                #expect(await database.engine.reader?.prepared.preparing == false, "lost twice, no longer prepared: \(diagnostics)")
                for (_, _, follower) in queries { await follower.stop() }
            }
        }
    }
}
