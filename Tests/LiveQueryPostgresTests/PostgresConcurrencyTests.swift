import Foundation
import ListDiff
import ListTesting
import LiveQueryCore
@testable import LiveQueryPostgres
import Logging
import PostgresNIO
import ScratchPostgres
import Testing

/// A writer session that commits random transactions and comes back after its connection is cut
/// (a terminated backend, a server restart). Its statements have a time limit (the engine's
/// session): a statement on a terminated backend has been seen never to end in postgres-nio.
actor WriterSession {
    let configuration: PostgresConnection.Configuration
    let id: Int
    private var connection: PostgresConnection?
    private(set) var committed = 0
    private(set) var failed = 0

    init(_ configuration: PostgresConnection.Configuration, id: Int) {
        self.configuration = configuration
        self.id = id
    }

    private func open() async throws -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        if let connection { try? await connection.close() }
        let opened = try await PostgresConnection.connect(configuration: configuration, id: 100 + id, logger: PG.logger)
        connection = opened
        return opened
    }

    private func session() async throws -> PostgresSession {
        PostgresSession(connection: try await open(), logger: PG.logger, timeout: .seconds(5))
    }

    /// The backend's process id (to terminate it from elsewhere).
    func backend() async throws -> Int64 {
        let text = try await session().text("SELECT pg_backend_pid()::text")
        return text.flatMap { Int64($0) } ?? 0
    }

    /// Runs `statements` in one transaction; a cut connection is the transaction's loss, not the test's.
    func transaction(_ statements: [String], rollback: Bool, pauseInside: Duration? = nil) async {
        do {
            let session = try await session()
            try await session.execute("BEGIN")
            for statement in statements { try await session.execute(statement) }
            if let pauseInside { try await Task.sleep(for: pauseInside) }
            try await session.execute(rollback ? "ROLLBACK" : "COMMIT")
            if !rollback { committed += 1 }
        } catch {
            failed += 1
            if let connection { try? await connection.close() }
            connection = nil
        }
    }

    func close() async {
        if let connection { try? await connection.close() }
        connection = nil
    }
}

extension PostgresDatabaseTests {
    /// Concurrent writers, a writer terminated mid-transaction and a PostgreSQL restart: every query
    /// — row by row, through a join, refetched — equals the SELECT at the end, every change having
    /// passed the strict headless view, and the positions of its results only grow.
    @Suite(.timeLimit(.minutes(5)))
    struct PostgresConcurrencyTests {
        static let schema = """
            CREATE TABLE category (id bigint PRIMARY KEY, label text COLLATE "C" NOT NULL);
            CREATE TABLE item (id bigint PRIMARY KEY, category_id bigint, name text COLLATE "C", score numeric, revision integer NOT NULL DEFAULT 0);
            CREATE INDEX ON item (category_id);
            INSERT INTO category SELECT g, 'c' || g FROM generate_series(1, 6) g;
            INSERT INTO item SELECT g, 1 + g % 6, 'n' || g, g % 17, 0 FROM generate_series(1, 200) g
            """

        static let requests: [(String, String, String?)] = [
            ("SELECT id, name FROM item WHERE category_id < 4 ORDER BY score DESC NULLS LAST, name",
             "SELECT id FROM item WHERE category_id < 4 ORDER BY score DESC NULLS LAST, name, id", nil),
            ("SELECT i.id, i.name, c.label FROM item i JOIN category c ON c.id = i.category_id ORDER BY c.label, i.name",
             "SELECT i.id FROM item i JOIN category c ON c.id = i.category_id ORDER BY c.label, i.name, i.id", "c.label"),
            ("SELECT category_id AS id, count(*) AS n FROM item WHERE category_id IS NOT NULL GROUP BY category_id ORDER BY n DESC, category_id",
             "SELECT category_id FROM item WHERE category_id IS NOT NULL GROUP BY category_id ORDER BY count(*) DESC, category_id", nil),
        ]

        static let names = ["Zoë", "Zoe\u{308}", "a", "A", "😀", "ß", "E\u{301}", "É", "", "n1"]

        static func randomStatements(_ random: inout SeededRandomNumberGenerator) -> [String] {
            (0..<Int.random(in: 1...3, using: &random)).map { _ in
                let id = Int.random(in: 1...240, using: &random)
                let name = names[Int.random(in: 0..<names.count, using: &random)]
                switch Int.random(in: 0..<8, using: &random) {
                case 0: return "INSERT INTO item VALUES (\(id), \(Int.random(in: 1...7, using: &random)), '\(name)', \(id % 13)) ON CONFLICT (id) DO UPDATE SET name = excluded.name, revision = item.revision + 1"
                case 1: return "UPDATE item SET score = score + 1, revision = revision + 1 WHERE id = \(id)"
                case 2: return "UPDATE item SET category_id = \(Int.random(in: 1...7, using: &random)) WHERE id = \(id)"
                case 3: return "UPDATE category SET label = '\(name)\(id % 5)' WHERE id = \(id % 6 + 1)"
                case 4: return "DELETE FROM item WHERE id = \(id)"
                case 5: return "UPDATE item SET score = NULL WHERE id % 11 = \(id % 11)"
                case 6: return "UPDATE item SET id = \(id + 300) WHERE id = \(id) AND NOT EXISTS (SELECT 1 FROM item WHERE id = \(id + 300))"
                default: return "UPDATE item SET name = '\(name)' WHERE id = \(id)"
                }
            }
        }

        @Test("concurrent writers, a writer terminated mid-transaction and a PostgreSQL restart: every query equals the SELECT at the end")
        func concurrentWriters() async throws {
            try await PostgresBehaviourTests.withDatabase(Self.schema) { configuration, writer, database in
                var queries: [(PostgresLiveQuery<Int64>, String, PostgresListFollower<Int64>, PostgresPositionTests.Recorder)] = []
                for (sql, expected, section) in Self.requests {
                    let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: sql, as: Int64.self, section: section), in: database)
                    queries.append((query, expected, await PostgresListFollower(query), PostgresPositionTests.Recorder(query)))
                }
                #expect(queries[0].0.mode == .incremental && queries[1].0.mode == .incremental)
                let seed = UInt64.random(in: 0...UInt64.max)
                print("PostgreSQL concurrency seed \(seed)")
                let sessions = (0..<4).map { WriterSession(configuration, id: $0) }
                await withTaskGroup(of: Void.self) { group in
                    for (index, session) in sessions.enumerated() {
                        group.addTask {
                            var random = SeededRandomNumberGenerator(seed: seed &+ UInt64(index))
                            for step in 0..<30 {
                                // The first writer's tenth transaction waits inside, to be terminated there.
                                let pause: Duration? = index == 0 && step == 10 ? .milliseconds(400) : nil
                                await session.transaction(Self.randomStatements(&random), rollback: Int.random(in: 0..<5, using: &random) == 0,
                                                          pauseInside: pause)
                            }
                        }
                    }
                    group.addTask {
                        // pg_terminate_backend on the writer waiting mid-transaction, from another session.
                        try? await Task.sleep(for: .milliseconds(150))
                        if let pid = try? await sessions[0].backend() {
                            try? await Task.sleep(for: .milliseconds(100))
                            try? await PG.execute(writer, "SELECT pg_terminate_backend(\(pid))")
                        }
                    }
                }
                // The server restarts: every connection is cut, the temporary slot goes; writers come back.
                try await PostgresCluster.restart()
                await withTaskGroup(of: Void.self) { group in
                    for (index, session) in sessions.enumerated() {
                        group.addTask {
                            var random = SeededRandomNumberGenerator(seed: seed &+ 100 &+ UInt64(index))
                            for _ in 0..<10 { await session.transaction(Self.randomStatements(&random), rollback: false) }
                        }
                    }
                }
                let checker = try await PostgresConnection.connect(configuration: configuration, id: 99, logger: PG.logger)
                do {
                    for (query, expected, follower, recorder) in queries {
                        let result = try await PG.upToDate(query)
                        let ids = try await PG.int64s(checker, expected)
                        #expect(result.map(PG.ids) == ids, "\(expected), seed \(seed)")
                        if let result { await follower.waitFor(result) }
                        await MainActor.run {
                            #expect(follower.view.violations.isEmpty, "\(expected), seed \(seed)")
                            #expect(!follower.failures.isEmpty, "the restart was told")
                        }
                        let positions = recorder.results.map(\.1)
                        #expect(zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 }, "positions grow: \(positions)")
                        await follower.stop()
                        recorder.stop()
                    }
                    let total = await sessions.asyncMap { await $0.committed }.reduce(0, +)
                    #expect(total > 60, "the writers committed")
                } catch {
                    try? await checker.close()
                    for session in sessions { await session.close() }
                    throw error
                }
                try await checker.close()
                for session in sessions { await session.close() }
            }
        }

        @Test("a schema change to a followed table refetches once with the reason; a sort column dropped is a failure that says so, and the query recovers when it is back")
        func schemaChanges() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE item (id bigint PRIMARY KEY, name text COLLATE "C", rank integer);
                INSERT INTO item SELECT g, 'n' || g, g % 5 FROM generate_series(1, 20) g
                """) { _, writer, database in
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: "SELECT id, name FROM item ORDER BY rank, name", as: Int64.self),
                                                             in: database)
                let follower = await PostgresListFollower(query)
                try await PG.execute(writer, "ALTER TABLE item ADD COLUMN note text")
                try await PG.execute(writer, "UPDATE item SET note = 'x', rank = 9 WHERE id = 3")
                var result = try await query.upToDate()
                #expect(PG.ids(result) == (try await PG.int64s(writer, "SELECT id FROM item ORDER BY rank, name, id")))
                await follower.waitFor(result)
                await MainActor.run { #expect(follower.updates.last?.path == .refetch(reason: .schemaChanged)) }

                try await PG.execute(writer, "ALTER TABLE item DROP COLUMN rank")
                try await PG.execute(writer, "UPDATE item SET name = 'zz' WHERE id = 4")
                _ = try? await query.upToDate()
                try await Task.sleep(for: .milliseconds(200))
                await MainActor.run {
                    #expect(follower.failures.contains { "\($0)".contains("rank") }, "the failure names the missing column: \(follower.failures)")
                }
                try await PG.execute(writer, "ALTER TABLE item ADD COLUMN rank integer DEFAULT 1")
                try await Task.sleep(for: .milliseconds(1_200))   // a failing query retries once a second
                result = try await query.upToDate()
                #expect(PG.ids(result) == (try await PG.int64s(writer, "SELECT id FROM item ORDER BY rank, name, id")))
                await follower.waitFor(result)
                await MainActor.run { #expect(follower.view.violations.isEmpty) }
                await follower.stop()
            }
        }
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async -> T) async -> [T] {
        var values: [T] = []
        for element in self { values.append(await transform(element)) }
        return values
    }
}
