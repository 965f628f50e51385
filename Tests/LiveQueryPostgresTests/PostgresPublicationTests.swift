import Foundation
import LiveQuery
@testable import LiveQueryPostgres
import PostgresNIO
import Testing

/// The publication the slot decodes: its name's case kept, and every change of a followed table
/// published or a typed error.
@Suite(.serialized, .timeLimit(.minutes(3)))
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
}
