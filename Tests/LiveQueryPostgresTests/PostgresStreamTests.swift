import Foundation
import LiveQueryCore
@testable import LiveQueryPostgres
import PostgresNIO
import ScratchPostgres
import Testing

extension PostgresDatabaseTests {
    /// The replication stream: commits pushed as PostgreSQL writes them, each reaching only the
    /// queries that read its tables, nothing added to the schema, nothing done while nothing happens.
    @Suite(.timeLimit(.minutes(3)))
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

        @Test("a commit whose record ends anywhere near a WAL page's edge (at the page's end, or run over just past the next page's header) is applied by the round whose snapshot sees it")
        func commitsAtPageEdges() async throws {
            try await PostgresBehaviourTests.withDatabase("""
                CREATE TABLE item (id bigint PRIMARY KEY, rank integer);
                INSERT INTO item SELECT g, g FROM generate_series(1, 5) g
                """) { _, writer, database in
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self, sort: [SortTerm("rank")]), in: database)
                _ = try await query.upToDate()
                let page = try #require(Int64(try await PG.strings(writer, "SHOW wal_block_size").first ?? ""))
                let segment = try #require(Int64(try await PG.strings(writer, "SELECT setting FROM pg_settings WHERE name = 'wal_segment_size'").first ?? ""))
                func insert() async throws -> Int64 {
                    try #require(try await PG.int64s(writer, "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint").first)
                }
                func pad(_ bytes: Int64) async throws {
                    try await PG.execute(writer, "SELECT pg_logical_emit_message(false, 'pad', repeat('x', \(max(bytes, 1))))")
                }
                // What a padding record takes beyond its text: the least of a few tries, since WAL
                // written meanwhile by others (autovacuum, a checkpoint, a full-page image) can only
                // add to one — and a measure too large would aim every commit away from the edges.
                var overhead = Int64.max
                for _ in 0..<5 {
                    let before = try await insert()
                    try await pad(100)
                    overhead = min(overhead, try await insert() - before - 100)
                }
                // Where the insert position stood after each commit, within its page.
                var offsets: [Int64: Int] = [:]
                for step in 0..<128 {
                    // The update's records (a heap update, then the commit) start `distance` bytes
                    // before a page's end: over the steps their end moves across the edge 8 bytes at a time.
                    let distance = Int64(8 * (step % 64) + 8)
                    let now = try await insert()
                    var target = (now / page + 1) * page - distance
                    if target - now < overhead + 8 { target += page }
                    let crossing = target / page > now / page ? Int64(24) : 0
                    try await pad(target - now - overhead - crossing)
                    let rank = 100 + step
                    try await PG.execute(writer, "UPDATE item SET rank = \(rank) WHERE id = \(1 + step % 5)")
                    let end = try await insert()
                    if end % segment >= page { offsets[end % page, default: 0] += 1 }
                    let result = try await query.upToDate()
                    let expected = try await PG.int64s(writer, "SELECT id FROM item ORDER BY rank, id")
                    #expect(PG.ids(result) == expected, "step \(step): the commit ended at \(end % page) bytes into a page")
                }
                // The edges this test is about were met: a commit that ended a page, and one whose record
                // ran 16 bytes over into the next page (ending where a long header would).
                #expect(offsets[24] ?? 0 > 0 && offsets[40] ?? 0 > 0, "offsets met: \(offsets.keys.sorted())")
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
                // Every query caught up first: none still wants a round when the commits come.
                for query in queries { _ = try await query.upToDate() }
                // And the engine quiet: a round still running when the commits come (woken by the
                // opens, late on a busy machine) would take them in its snapshot instead.
                var quietSince = ContinuousClock.now
                var lastSnapshots = await database.engine.snapshotsTaken
                let settleBy = ContinuousClock.now + .seconds(10)
                while quietSince.duration(to: .now) < .milliseconds(300), ContinuousClock.now < settleBy {
                    try await Task.sleep(for: .milliseconds(20))
                    let now = await database.engine.snapshotsTaken
                    if now != lastSnapshots { (lastSnapshots, quietSince) = (now, .now) }
                }
                let read = queries.map(\.statistics.rowsRead)
                let (snapshots, passed) = await (database.engine.snapshotsTaken, database.engine.commitsPassedOver)
                for id in 1...10 { try await PG.execute(writer, "INSERT INTO other VALUES (\(id))") }
                // Passed over as the stream brings them (a round that ran before would take them in
                // its snapshot: upToDate's own, were it called at once).
                let passBy = ContinuousClock.now + .seconds(10)
                while await database.engine.commitsPassedOver - passed < 10, ContinuousClock.now < passBy {
                    try await Task.sleep(for: .milliseconds(5))
                }
                try await PG.execute(writer, "UPDATE t7 SET rank = -rank WHERE id = 3")
                let result = try #require(try await PG.upToDate(queries[7]))
                #expect(PG.ids(result).first == 3)
                #expect(queries[7].statistics.rowsRead == read[7] + 1, "the touched row, read once")
                for index in 0..<tables where index != 7 {
                    #expect(queries[index].statistics.rowsRead == read[index], "t\(index)'s query read nothing")
                }
                let (after, passedAfter) = await (database.engine.snapshotsTaken, database.engine.commitsPassedOver)
                let diagnostics = await database.engine.diagnostics
                #expect(passedAfter - passed >= 10, "the commits to a table no query reads passed without a round (\(diagnostics))")
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
}
