import Foundation
import LiveQuery
@testable import LiveQueryPostgres
import PostgresNIO
import ScratchPostgres
import Testing

/// The replication stream: commits pushed as PostgreSQL writes them, each reaching only the
/// queries that read its tables, nothing added to the schema, nothing done while nothing happens.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PostgresStreamTests {
    @Test("no trigger in the schema, no round while nothing is committed; a commit reaches the query pushed by the stream")
    func pushed() async throws {
        try await PostgresBehaviourTests.withDatabase("CREATE TABLE item (id bigint PRIMARY KEY, rank integer)") { _, writer, database in
            let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self, sort: [SortTerm("rank")]), in: database)
            #expect(try await PG.strings(writer, "SELECT tgname::text FROM pg_trigger WHERE tgrelid = 'item'::regclass").isEmpty)
            var iterator = query.events.makeAsyncIterator()
            _ = await iterator.next()   // .initial
            let quiet = await database.engine.snapshotsTaken
            try await Task.sleep(for: .seconds(1))
            #expect(await database.engine.snapshotsTaken == quiet, "no snapshot while nothing is committed")
            for step in 1...5 {
                try await PG.execute(writer, "INSERT INTO item VALUES (\(step), \(-step))")
                guard case let .update(update) = await iterator.next() else {
                    Issue.record("no update")
                    break
                }
                #expect(PG.ids(update.result) == Array((1...Int64(step)).reversed()))
            }
        }
    }

    @Test("a commit reaches only the queries that read its tables; commits to other tables pass without a round or a read")
    func proportional() async throws {
        let tables = 20
        let schema = (0..<tables).map { "CREATE TABLE t\($0) (id bigint PRIMARY KEY, rank integer);\nINSERT INTO t\($0) SELECT g, g FROM generate_series(1, 50) g" }
            .joined(separator: ";\n") + ";\nCREATE TABLE other (id bigint PRIMARY KEY)"
        try await PostgresBehaviourTests.withDatabase(schema) { _, writer, database in
            var queries: [PostgresLiveQuery<Int64>] = []
            for index in 0..<tables {
                queries.append(try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "t\(index)", as: Int64.self, sort: [SortTerm("rank")]),
                                                                in: database))
            }
            _ = try await queries[0].upToDate()
            let read = queries.map(\.statistics.rowsRead)
            let (snapshots, passed) = await (database.engine.snapshotsTaken, database.engine.commitsPassedOver)
            for id in 1...10 { try await PG.execute(writer, "INSERT INTO other VALUES (\(id))") }
            try await PG.execute(writer, "UPDATE t7 SET rank = -rank WHERE id = 3")
            let result = try #require(try await PG.upToDate(queries[7]))
            #expect(PG.ids(result).first == 3)
            #expect(queries[7].statistics.rowsRead == read[7] + 1, "the touched row, read once")
            for index in 0..<tables where index != 7 {
                #expect(queries[index].statistics.rowsRead == read[index], "t\(index)'s query read nothing")
            }
            let (after, passedAfter) = await (database.engine.snapshotsTaken, database.engine.commitsPassedOver)
            #expect(passedAfter - passed >= 10, "the commits to a table no query reads passed without a round")
            #expect(after - snapshots <= 4, "\(after - snapshots) rounds for one commit to a followed table (and upToDate's)")
        }
    }

    @Test("a transaction left open after writing does not hold a round back: its unflushed WAL is flushed for the round")
    func openTransaction() async throws {
        try await PostgresBehaviourTests.withDatabase("CREATE TABLE item (id bigint PRIMARY KEY);\nCREATE TABLE scratch (id bigint PRIMARY KEY, payload text)") {
            configuration, writer, database in
            let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self), in: database)
            let open = try await PostgresConnection.connect(configuration: configuration, id: 7, logger: PG.logger)
            do {
                try await PG.execute(writer, "INSERT INTO item VALUES (1)")
                try await PG.execute(open, "BEGIN")
                try await PG.execute(open, "INSERT INTO scratch SELECT g, repeat('x', 100) FROM generate_series(1, 20) g")
                // The round's snapshot sees WAL that nobody flushes (the transaction stays open).
                let result = try #require(try await PG.upToDate(query, within: 20))
                #expect(PG.ids(result) == [1])
                try await PG.execute(open, "ROLLBACK")
            } catch {
                try? await open.close()
                throw error
            }
            try await open.close()
        }
    }
}
