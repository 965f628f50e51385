import Foundation
import LiveQueryCore
@testable import LiveQueryPostgres
import PostgresNIO
import ScratchPostgres
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension PostgresDatabaseTests {
    /// A replication stream that stops while commits go on — its walsender stopped with SIGSTOP,
    /// as a hung server process or a cut network would leave it: the lag says so within seconds of
    /// the stall's start and is gone within seconds of its end, the watchdog reconnects a stream
    /// that stays behind, and the list equals the SELECT after. Counted, never timed: the bounds
    /// are the figures the readiness check promises.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresStallTests {
        struct Figures {
            var behindAfter: Duration?
            var caughtUpAfter: Duration?
        }

        /// The walsender streaming `database`'s slot.
        static func walsender(of database: PostgresLiveDatabase, _ writer: PostgresConnection) async throws -> pid_t {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                let pids = try await PG.int64s(writer, "SELECT active_pid::int8 FROM pg_replication_slots WHERE slot_name = '\(database.engine.slotName)' AND active_pid IS NOT NULL")
                if let pid = pids.first { return pid_t(pid) }
                try await Task.sleep(for: .milliseconds(20))
            }
            throw PostgresLiveQueryError.slotLost("the slot of the database under test")
        }

        /// Stops the walsender for `stall` while `writer` commits ten times a second; measures when the
        /// lag passes `limit` after the stop and when it is gone after the continue.
        static func stall(_ database: PostgresLiveDatabase, _ writer: PostgresConnection, for stall: Duration, limit: Duration) async throws -> Figures {
            let pid = try await walsender(of: database, writer)
            var figures = Figures()
            let stopped = ContinuousClock.now
            kill(pid, SIGSTOP)
            var next: Int64 = 1_000
            while stopped.duration(to: .now) < stall {
                try await PG.execute(writer, "INSERT INTO item VALUES (\(next), \(next % 7))")
                next += 1
                if figures.behindAfter == nil, (database.replicationStatus.lag ?? .zero) > limit { figures.behindAfter = stopped.duration(to: .now) }
                try await Task.sleep(for: .milliseconds(100))
            }
            let resumed = ContinuousClock.now
            kill(pid, SIGCONT)
            while resumed.duration(to: .now) < .seconds(30) {
                let status = database.replicationStatus
                if case .streaming = status.stream, status.lag == .zero, status.applied >= status.walPosition ?? .zero, status.probedAt.map({ $0 > resumed }) ?? false {
                    figures.caughtUpAfter = resumed.duration(to: .now)
                    break
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            return figures
        }

        @Test("a walsender stopped 8 s under writes: the lag passes 3 s within 5 s of the stop, is gone within 5 s of the continue, and the list equals the SELECT")
        func stoppedWalsender() async throws {
            try await PostgresBehaviourTests.withDatabase("CREATE TABLE item (id bigint PRIMARY KEY, rank integer)") { _, writer, database in
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self, sort: [SortTerm("rank")]), in: database)
                try await PG.execute(writer, "INSERT INTO item SELECT g, g % 7 FROM generate_series(1, 20) g")
                _ = try await query.upToDate()
                let before = database.replicationStatus
                #expect(before.lag == .zero || before.lag == nil, "no lag while following: \(String(describing: before.lag))")
                let figures = try await Self.stall(database, writer, for: .seconds(8), limit: .seconds(3))
                let behind = try #require(figures.behindAfter, "the lag never passed 3 s")
                #expect(behind <= .seconds(5), "behind after \(behind)")
                let caughtUp = try #require(figures.caughtUpAfter, "the lag never went back to 0")
                #expect(caughtUp <= .seconds(5), "caught up after \(caughtUp)")
                let result = try #require(try await PG.upToDate(query, within: 30))
                #expect(PG.ids(result) == (try await PG.int64s(writer, "SELECT id FROM item ORDER BY rank, id")))
                #expect(database.replicationStatus.streamReconnects >= 1, "the stream's own liveness check ended the stalled session")
            }
        }

        @Test("with a 1 s bound the watchdog finds the stalled stream before its liveness check does: it reconnects, says so, counts it; the list equals the SELECT after")
        func watchdogReconnects() async throws {
            guard let cluster = try await PostgresCluster.running() else { return }
            try await PostgresCluster.exclusively {
                let (configuration, writer) = try await PostgresCluster.database(cluster)
                try await PG.execute(writer, "CREATE TABLE item (id bigint PRIMARY KEY, rank integer)")
                let database = try await PostgresLiveDatabase.connect(configuration, timeout: .seconds(15), stallBound: .seconds(1), logger: PG.logger)
                do {
                    let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self, sort: [SortTerm("rank")]), in: database)
                    _ = try await query.upToDate()
                    #expect(database.replicationStatus.watchdogFirings == 0, "no firing while following")
                    _ = try await Self.stall(database, writer, for: .seconds(3), limit: .seconds(1))
                    #expect(database.replicationStatus.watchdogFirings >= 1, "\(database.replicationStatus)")
                    let result = try #require(try await PG.upToDate(query, within: 30))
                    #expect(PG.ids(result) == (try await PG.int64s(writer, "SELECT id FROM item ORDER BY rank, id")))
                    // Following again: the watchdog stays quiet.
                    let firings = database.replicationStatus.watchdogFirings
                    for id in 0..<20 {
                        try await PG.execute(writer, "UPDATE item SET rank = rank + 1 WHERE id = \(1_000 + id)")
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    #expect(database.replicationStatus.watchdogFirings == firings)
                } catch {
                    await database.close()
                    try? await writer.close()
                    throw error
                }
                await database.close()
                try? await writer.close()
            }
        }
    }
}
