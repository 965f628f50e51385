import Foundation
import ListDiff
import LiveQueryCore
@testable import LiveQueryPostgres
import ScratchPostgres
import Testing

extension PostgresDatabaseTests {
    /// A large query opens with its first screen; the rest is read in the same snapshot beside the
    /// rounds, and completed with the commits made meanwhile.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresFirstScreenTests {
        @Test("a large query opens with its first screen, then the whole result arrives as one update with the commits made meanwhile, equal to the SELECT")
        func firstScreen() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE item (id bigint PRIMARY KEY, name text COLLATE "C" NOT NULL, flag integer NOT NULL);
                INSERT INTO item SELECT g, substr(md5(g::text), 1, 10), g % 2 FROM generate_series(1, 40000) g;
                CREATE INDEX ON item (flag, name)
                """) { _, writer, database in
                let request = PostgresLiveQueryRequest(sql: "SELECT id, name FROM item WHERE flag = 1 ORDER BY name", as: Int64.self)
                let query = try await PostgresLiveQuery.open(request, in: database, firstScreenRows: 50)
                #expect(!query.initialResult.isComplete && query.initialResult.count == 50)
                let follower = await PostgresListFollower(query)
                // Commits while the rest is read: rows moving into the first screen, out of it, gone, new.
                try await PG.execute(writer, "UPDATE item SET name = '0000' WHERE id = 39999")
                try await PG.execute(writer, "DELETE FROM item WHERE id IN (SELECT id FROM item WHERE flag = 1 ORDER BY name LIMIT 3)")
                try await PG.execute(writer, "INSERT INTO item VALUES (50001, '00001', 1), (50003, 'zzzz', 1), (50005, 'm', 0)")
                try await PG.execute(writer, "UPDATE item SET flag = 1 - flag WHERE id BETWEEN 100 AND 110")
                let result = try await query.upToDate()
                #expect(result.isComplete)
                #expect(PG.ids(result) == (try await PG.int64s(writer, "SELECT id FROM item WHERE flag = 1 ORDER BY name, id")))
                await follower.waitFor(result)
                await MainActor.run {
                    // (On a loaded machine the rest may be in before the follower listens: it starts from it.)
                    #expect(follower.updates.contains { $0.path == .firstFetchCompleted } || follower.startedLater)
                    #expect(follower.view.violations.isEmpty)
                    #expect(follower.dataSource.snapshot.itemCount == result.count)
                }
                #expect(query.position(of: result) != nil)
                await follower.stop()
            }
        }
    }
}
