import Foundation
import ListDiff
import LiveQuery
@testable import LiveQueryPostgres
import Logging
import PostgresNIO
import ScratchPostgres
import Testing

/// How commits are noticed: a notification from the tables' statement triggers wakes the queries
/// at once, and a look that finds no WAL written costs no snapshot.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PostgresWakeTests {
    @Test("with notifications, another session's commit reaches the query long before the fallback poll")
    func notifications() async throws {
        guard let cluster = try await PostgresCluster.running() else { return }
        try await PostgresCluster.exclusively {
            let (configuration, writer) = try await PostgresCluster.database(cluster)
            try await PG.execute(writer, "CREATE TABLE item (id bigint PRIMARY KEY, rank integer)")
            let database = try await PostgresLiveDatabase.connect(configuration, wake: .notify(fallback: .seconds(60)), logger: PG.logger)
            let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self, sort: [SortTerm("rank")]), in: database)
            let triggers = try await PG.strings(writer, "SELECT tgname::text FROM pg_trigger WHERE tgrelid = 'item'::regclass")
            #expect(triggers == ["livelist_notify"])
            var iterator = query.events.makeAsyncIterator()
            _ = await iterator.next()   // .initial
            for step in 1...5 {
                let started = ContinuousClock.now
                try await PG.execute(writer, "INSERT INTO item VALUES (\(step), \(-step))")
                guard case let .update(update) = await iterator.next() else {
                    Issue.record("no update")
                    break
                }
                #expect(PG.ids(update.result) == Array((1...Int64(step)).reversed()))
                #expect(started.duration(to: .now) < .seconds(10), "woken by the notification, not the 60 s poll")
            }
            // A second database over the same tables finds the trigger there.
            let again = try await PostgresLiveDatabase.connect(configuration, wake: .notify(fallback: .seconds(60)), logger: PG.logger)
            _ = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self), in: again)
            await again.close()
            await database.close()
            try await writer.close()
        }
    }

    @Test("a look that finds no WAL written since the last round takes no snapshot")
    func quietLooks() async throws {
        try await PostgresBehaviourTests.withDatabase("CREATE TABLE item (id bigint PRIMARY KEY)") { _, writer, database in
            let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self), in: database)
            try await Task.sleep(for: .milliseconds(100))
            let before = await (database.engine.snapshotsTaken, database.engine.quietLooks)
            // Polled every 5 ms: ten looks take some 50 ms (longer on a loaded machine or under a
            // sanitizer, so the wait is for the looks, not for a time), and (barring WAL from the
            // server itself) they take no snapshot.
            var after = before
            let deadline = ContinuousClock.now + .seconds(20)
            while after.1 - before.1 < 10, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                after = await (database.engine.snapshotsTaken, database.engine.quietLooks)
            }
            #expect(after.1 - before.1 >= 10)
            #expect(after.0 - before.0 <= 2)
            try await PG.execute(writer, "INSERT INTO item VALUES (1)")
            try await Task.sleep(for: .milliseconds(100))
            #expect(query.latestResult.count == 1)
        }
    }
}
