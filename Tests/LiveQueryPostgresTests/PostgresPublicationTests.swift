import Foundation
import LiveQueryCore
@testable import LiveQueryPostgres
import PostgresNIO
import ScratchPostgres
import Testing

extension PostgresDatabaseTests {
    /// The publication the slot decodes: its name's case kept, and every change of a followed table
    /// published or a typed error.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresPublicationTests {
        @Test("a publication named in mixed case is decoded by that name")
        func mixedCase() async throws {
            try await PostgresBehaviourTests.withDatabase("CREATE TABLE item (id bigint PRIMARY KEY)") { configuration, writer, _ in
                let database = try await PostgresLiveDatabase.connect(configuration, publication: "LiveList Pub", logger: PG.logger)
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self), in: database)
                try await PG.execute(writer, "INSERT INTO item VALUES (1), (2)")
                #expect(PG.ids(try await query.upToDate()) == [1, 2])
                await database.close()
            }
        }

        @Test("a publication that leaves out deletes, or filters rows, is a typed error that says what to publish")
        func omittedChanges() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE item (id bigint PRIMARY KEY, flag boolean);
                CREATE PUBLICATION no_deletes FOR ALL TABLES WITH (publish = 'insert, update');
                CREATE PUBLICATION filtered FOR TABLE item WHERE (flag)
                """) { configuration, _, _ in
                for publication in ["no_deletes", "filtered"] {
                    let database = try await PostgresLiveDatabase.connect(configuration, publication: publication, logger: PG.logger)
                    await #expect {
                        try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self), in: database)
                    } throws: {
                        guard case let .publicationOmitsChanges(_, name, omitted) = $0 as? PostgresLiveQueryError else { return false }
                        return name == publication && (publication == "filtered" ? omitted.contains("row filter") : omitted.contains("deletes"))
                    }
                    await database.close()
                }
            }
        }

        @Test("instances that start together on a missing publication all start: the one whose CREATE loses reads the winner's")
        func concurrentCreation() async throws {
            #expect(PostgresDatabaseRunner.isDuplicate("23505") && PostgresDatabaseRunner.isDuplicate("42710") && !PostgresDatabaseRunner.isDuplicate("42501"))
            try await PostgresBehaviourTests.withDatabase("CREATE TABLE item (id bigint PRIMARY KEY)") { configuration, writer, _ in
                // Several rounds of four instances racing for a fresh name: without the duplicate rule
                // the losers fail with publicationMissing (SQLSTATE 23505 or 42710).
                for round in 0..<4 {
                    let name = "racing_\(round)"
                    let databases = try await withThrowingTaskGroup(of: PostgresLiveDatabase.self) { group in
                        for _ in 0..<4 { group.addTask { try await PostgresLiveDatabase.connect(configuration, publication: name, logger: PG.logger) } }
                        return try await group.reduce(into: []) { $0.append($1) }
                    }
                    try await PG.execute(writer, "INSERT INTO item VALUES (\(round + 1))")
                    for database in databases {
                        let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self), in: database)
                        #expect(PG.ids(try await query.upToDate()) == Array(1...Int64(round + 1)))
                        await database.close()
                    }
                }
            }
        }
    }
}
