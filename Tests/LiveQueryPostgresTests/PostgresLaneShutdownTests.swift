import Foundation
import LiveQueryCore
@testable import LiveQueryPostgres
import PostgresNIO
import Testing

extension PostgresDatabaseRunner {
    /// How many lanes read apart now (taken, their transaction not ended).
    var lanesReading: Int {
        lanes.lanes.filter {
            if case .reading = $0 { return true }
            return false
        }.count
    }

    /// How many queries a round has work for.
    var attended: Int { attention.count }
}

extension PostgresDatabaseTests {
    /// The runner shuts down while a lane reads a refetched query apart: shutdown wins. The lane's
    /// read is held on a lock another session keeps on a table the query joins, so the shutdown
    /// comes while it reads, every time.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresLaneShutdownTests {
        /// Polls `condition` every 10 ms for up to 20 s; whether it came true.
        static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                if try await condition() { return true }
                try await Task.sleep(for: .milliseconds(10))
            }
            return false
        }

        @Test("shut down while a lane reads apart: the read ends with the lane's connection, and no round is asked for its query after")
        func shutDownWhileReadApart() async throws {
            let schema = "CREATE TABLE item (id bigint PRIMARY KEY, rank integer);\nCREATE TABLE gate (id integer PRIMARY KEY);\nINSERT INTO gate VALUES (1)"
            try await PostgresBehaviourTests.withDatabase(schema) { configuration, writer, database in
                let request = PostgresLiveQueryRequest(sql: "SELECT i.id, i.rank FROM item i JOIN gate g ON g.id = i.rank ORDER BY i.rank, i.id LIMIT 50",
                                                       identity: "id", as: Int64.self)
                let query = try await PostgresLiveQuery.open(request, in: database)
                guard case .refetch = query.mode else {
                    Issue.record("expected a refetched query, got \(query.mode)")
                    return
                }
                let engine = database.engine
                let locker = try await PostgresConnection.connect(configuration: configuration, id: 91, logger: PG.logger)
                do {
                    try await PG.execute(locker, "BEGIN")
                    try await PG.execute(locker, "LOCK TABLE gate IN ACCESS EXCLUSIVE MODE")
                    try await PG.execute(writer, "INSERT INTO item VALUES (1, 1)")
                    // The round detaches the query; its lane's read waits for the lock.
                    let reading = try await Self.eventually { await engine.lanesReading == 1 }
                    let diagnostics = await engine.diagnostics
                    #expect(reading, "no lane took the query: \(diagnostics)")
                    let waits = try await Self.eventually {
                        try await PG.int64s(writer, "SELECT count(*) FROM pg_locks WHERE relation = 'gate'::regclass AND NOT granted") != [0]
                    }
                    #expect(waits, "the lane's read never waited for the lock")
                    await database.close()
                    try await PG.execute(locker, "ROLLBACK")
                } catch {
                    try? await locker.close()
                    throw error
                }
                try await locker.close()
                let ended = try await Self.eventually { await engine.lanesReading == 0 }
                #expect(ended, "the lane's read outlived its connection")
                let attended = await engine.attended
                #expect(attended == 0, "shut down: no query is given to a round again (\(attended) were)")
                let closed = await engine.isClosed
                #expect(closed)
            }
        }
    }
}
