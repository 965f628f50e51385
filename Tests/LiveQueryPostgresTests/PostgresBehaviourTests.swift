import Foundation
import ListDiff
import LiveQueryCore
@testable import LiveQueryPostgres
import Logging
import PostgresNIO
import ScratchPostgres
import Testing

extension PostgresDatabaseTests {
    /// What a PostgreSQL live query does beyond the common path: the server's order for collations
    /// it cannot reproduce, truncations, other tables, big transactions, a killed connection, non-
    /// integer identities, and every typed error.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresBehaviourTests {
        /// A fresh database with `schema` (statements separated by `;` at line ends), a writer
        /// session and a live database, closed after `body` whether it throws or not (a connection
        /// must be closed before it goes).
        static func withDatabase(_ schema: String, timeout: Duration = .seconds(15),
                                 _ body: (PostgresConnection.Configuration, PostgresConnection, PostgresLiveDatabase) async throws -> Void) async throws {
            guard let cluster = try await PostgresCluster.running() else { return }
            try await PostgresCluster.exclusively {
                let (configuration, writer) = try await PostgresCluster.database(cluster)
                do {
                    for statement in schema.components(separatedBy: ";\n") where !statement.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                        try await PG.execute(writer, statement)
                    }
                    let database = try await PostgresLiveDatabase.connect(configuration, refetchThreshold: 50,
                                                                          timeout: timeout, logger: PG.logger)
                    do {
                        try await body(configuration, writer, database)
                    } catch {
                        await database.close()
                        throw error
                    }
                    await database.close()
                } catch {
                    try? await writer.close()
                    throw error
                }
                try? await writer.close()   // cut by a restart in some tests: nothing left to close
            }
        }

        static let hostileNames = ["Zoë", "Zoe\u{308}", "zoe", "ZOE", "Émile", "E\u{301}mile", "émile", "a", "A", "b", "B", "ß", "ss", "Å", "A\u{30A}", "\u{212B}", "", "😀", "-a", "a-"]

        @Test("text under a libc or an ICU collation is ordered by the server: the query refetches, says why, and equals the SELECT",
              arguments: ["C.utf8", "und-x-icu", "en-x-icu"])
        func serverCollations(collation: String) async throws {
            try await Self.withDatabase("CREATE TABLE person (id bigint PRIMARY KEY, name text COLLATE \"\(collation)\")") { _, writer, database in
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "person", as: Int64.self, sort: [SortTerm("name")]), in: database)
                guard case let .refetch(reason) = query.mode, case let .request(shapes) = reason, case .customCollation = shapes.first else {
                    Issue.record("expected a refetch for the collation, got \(query.mode)")
                    return
                }
                for (offset, name) in Self.hostileNames.enumerated() {
                    try await PG.execute(writer, "INSERT INTO person VALUES (\(offset), '\(name)')")
                    if offset % 4 == 3 { try await PG.execute(writer, "UPDATE person SET name = name || 'x' WHERE id = \(offset / 2)") }
                    let result = try await query.upToDate()
                    #expect(PG.ids(result) == (try await PG.int64s(writer, "SELECT id FROM person ORDER BY name, id")), "\(collation) after \(name)")
                }
                #expect(query.statistics.refetches > 0)
            }
        }

        @Test("a uuid identity with a text sort is kept incrementally, through key changes and deletes")
        func uuidIdentity() async throws {
            try await Self.withDatabase("CREATE TABLE tag (id uuid PRIMARY KEY, label text COLLATE \"C\")") { _, writer, database in
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "tag", as: UUID.self, sort: [SortTerm("label", .descending)]),
                                                             in: database)
                #expect(query.mode == .incremental)
                var ids: [UUID] = []
                for (offset, name) in Self.hostileNames.enumerated() {
                    let id = UUID()
                    ids.append(id)
                    try await PG.execute(writer, "INSERT INTO tag VALUES ('\(id.uuidString)', '\(name)')")
                    if offset % 3 == 2 { try await PG.execute(writer, "UPDATE tag SET id = '\(UUID().uuidString)' WHERE id = '\(ids[offset / 2].uuidString)'") }
                    if offset % 5 == 4 { try await PG.execute(writer, "DELETE FROM tag WHERE id = '\(ids[offset - 1].uuidString)'") }
                    let result = try await query.upToDate()
                    let expected = try await PG.strings(writer, "SELECT id::text FROM tag ORDER BY label DESC, id")
                    #expect(PG.ids(result).map { $0.uuidString.lowercased() } == expected, "after \(name)")
                }
                #expect(query.statistics.refetches == 0)
            }
        }

        @Test("truncation, a change to a table the filter reads, and a transaction over the threshold each refetch once with the reason")
        func refetchReasons() async throws {
            try await Self.withDatabase("""
                CREATE TABLE owner (id bigint PRIMARY KEY, active boolean NOT NULL);
                CREATE TABLE task (id bigint PRIMARY KEY, owner bigint, title text COLLATE "C");
                INSERT INTO owner VALUES (1, true), (2, false);
                INSERT INTO task SELECT g, 1 + g % 2, 't' || g FROM generate_series(1, 20) g;
                """) { _, writer, database in
                let request = PostgresLiveQueryRequest(table: "task", as: Int64.self, filter: "owner IN (SELECT id FROM owner WHERE active)",
                                                       sort: [SortTerm("title")])
                let query = try await PostgresLiveQuery.open(request, in: database)
                let follower = await PostgresListFollower(query)
                func check(_ step: String) async throws -> LiveQueryUpdate<Int64>? {
                    let result = try await query.upToDate()
                    let expected = try await PG.int64s(writer, "SELECT id FROM task WHERE owner IN (SELECT id FROM owner WHERE active) ORDER BY title, id")
                    #expect(PG.ids(result) == expected, "\(step)")
                    await follower.waitFor(result)
                    return await follower.updates.last
                }
                try await PG.execute(writer, "UPDATE task SET title = 'zz' WHERE id = 2")
                #expect(try await check("one row")?.path == .incremental)
                try await PG.execute(writer, "UPDATE owner SET active = true WHERE id = 2")
                #expect(try await check("other table")?.path == .refetch(reason: .tableChanged("owner")))
                try await PG.execute(writer, "INSERT INTO task SELECT g, 1, 'n' || g FROM generate_series(100, 200) g")
                #expect(try await check("big transaction")?.path == .refetch(reason: .tooManyRowsChanged(threshold: 50)))
                try await PG.execute(writer, "TRUNCATE task")
                #expect(try await check("truncate")?.path == .refetch(reason: .tableChanged("task")))
                #expect(query.latestResult.count == 0)
                await MainActor.run { #expect(follower.view.violations.isEmpty) }
                await follower.stop()
            }
        }

        @Test("a killed reading connection: the next round reconnects; nothing was missed, so nothing is refetched and no failure is shown")
        func killedReader() async throws {
            try await Self.withDatabase("""
                CREATE TABLE item (id bigint PRIMARY KEY, rank integer);
                INSERT INTO item SELECT g, g FROM generate_series(1, 10) g;
                """, timeout: .seconds(2)) { _, writer, database in
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self, sort: [SortTerm("rank")]), in: database)
                let follower = await PostgresListFollower(query)
                try await PG.execute(writer, """
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
                    """)
                try await PG.execute(writer, "UPDATE item SET rank = -rank WHERE id % 2 = 0")
                let result = try await PG.upToDate(query, within: 30)
                let expected = try await PG.int64s(writer, "SELECT id FROM item ORDER BY rank, id")
                #expect(result.map(PG.ids) == expected)
                await follower.waitFor(query.latestResult)
                await MainActor.run {
                    #expect(follower.failures.isEmpty)
                    #expect(follower.view.violations.isEmpty)
                }
                #expect(query.statistics.refetches == 0)
                await follower.stop()
            }
        }

        @Test("a killed replication connection: a persistent slot goes on where it was, nothing refetched; a temporary one is lost, so the queries say so once and refetch",
              arguments: [true, false])
        func killedStream(persistent: Bool) async throws {
            try await Self.withDatabase("""
                CREATE TABLE item (id bigint PRIMARY KEY, rank integer);
                INSERT INTO item SELECT g, g FROM generate_series(1, 10) g;
                """) { configuration, writer, database in
                let slot = "livelist_killed_\(UInt32.random(in: 0...UInt32.max))"
                let followed = persistent ? try await PostgresLiveDatabase.connect(configuration, slot: .persistent(slot), logger: PG.logger) : database
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self, sort: [SortTerm("rank")]), in: followed)
                let follower = await PostgresListFollower(query)
                for round in 0..<3 {
                    try await PG.execute(writer, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'walsender'")
                    // Committed while the stream is down.
                    try await PG.execute(writer, "UPDATE item SET rank = -rank WHERE id % 3 = \(round)")
                    try await PG.execute(writer, "INSERT INTO item VALUES (\(100 + round), \(round))")
                }
                let result = try await PG.upToDate(query, within: 30)
                #expect(result.map(PG.ids) == (try await PG.int64s(writer, "SELECT id FROM item ORDER BY rank, id")))
                await follower.waitFor(query.latestResult)
                let failures = await MainActor.run { follower.failures.count }
                await MainActor.run { #expect(follower.view.violations.isEmpty) }
                if persistent {
                    #expect(failures == 0 && query.statistics.refetches == 0, "\(failures) failures, \(query.statistics.refetches) refetches")
                    await followed.close()
                    try await PG.execute(writer, "SELECT pg_drop_replication_slot('\(slot)')")
                } else {
                    #expect(failures >= 1 && failures <= 3 && query.statistics.refetches >= 1, "\(failures) failures")
                }
                await follower.stop()
            }
        }

        @Test("a query whose filter fails on new data reports it once and recovers when the data does; the database's other queries go on")
        func failingFilter() async throws {
            try await Self.withDatabase("""
                CREATE TABLE item (id bigint PRIMARY KEY, d integer NOT NULL);
                INSERT INTO item SELECT g, g FROM generate_series(1, 10) g;
                """) { _, writer, database in
                let fragile = try await PostgresLiveQuery.open(
                    PostgresLiveQueryRequest(table: "item", as: Int64.self, filter: "100 / d > 5", sort: [SortTerm("d")]), in: database)
                let sturdy = try await PostgresLiveQuery.open(
                    PostgresLiveQueryRequest(table: "item", as: Int64.self, sort: [SortTerm("d", .descending)]), in: database)
                let follower = await PostgresListFollower(fragile)
                try await PG.execute(writer, "UPDATE item SET d = 0 WHERE id = 3")   // the filter divides by zero on it
                for step in 0..<5 {
                    try await PG.execute(writer, "UPDATE item SET d = d + 10 WHERE id = \(5 + step)")
                    let expected = try await PG.int64s(writer, "SELECT id FROM item ORDER BY d DESC, id")
                    #expect(PG.ids(try await sturdy.upToDate()) == expected, "step \(step)")
                }
                try await Task.sleep(for: .milliseconds(300))
                await MainActor.run {
                    #expect(follower.failures.count == 1)
                    #expect(follower.failures.first.map { "\($0)".contains("division by zero") } == true)
                }
                try await PG.execute(writer, "UPDATE item SET d = 4 WHERE id = 3")
                try await Task.sleep(for: .milliseconds(1_200))   // failing queries retry once a second
                let result = try await fragile.upToDate()
                #expect(PG.ids(result) == (try await PG.int64s(writer, "SELECT id FROM item WHERE 100 / d > 5 ORDER BY d, id")))
                await follower.waitFor(result)
                await MainActor.run {
                    #expect(follower.failures.count == 1)
                    #expect(follower.view.violations.isEmpty)
                }
                await follower.stop()
            }
        }

        @Test("bad input is a typed error that says what to do; the database stays usable")
        func typedErrors() async throws {
            try await Self.withDatabase("""
                CREATE TABLE item (id bigint PRIMARY KEY, name text);
                CREATE TABLE loose (name text);
                CREATE TABLE tagged (id text PRIMARY KEY);
                """) { configuration, writer, database in
                await #expect { try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "nope", as: Int64.self), in: database) } throws: {
                    if case .unknownTable("nope") = $0 as? PostgresLiveQueryError { return true } else { return false }
                }
                await #expect { try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self, sort: [SortTerm("nope")]), in: database) } throws: {
                    if case .unknownColumn(table: "item", column: "nope") = $0 as? PostgresLiveQueryError { return true } else { return false }
                }
                await #expect { try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "loose", as: Int64.self), in: database) } throws: {
                    if case .identityNotUnique = $0 as? PostgresLiveQueryError { return true } else { return false }
                }
                await #expect { try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "tagged", as: Int64.self), in: database) } throws: {
                    if case .identityTypeMismatch = $0 as? PostgresLiveQueryError { return true } else { return false }
                }
                await #expect { try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self, filter: "nonsense > 1"), in: database) } throws: {
                    ($0 as? PostgresLiveQueryError)?.sqlState == "42703"   // undefined_column, as the server says
                }
                await #expect { try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self, filter: "id >"), in: database) } throws: {
                    ($0 as? PostgresLiveQueryError)?.sqlState == "42601"   // syntax_error
                }
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self), in: database)
                try await PG.execute(writer, "INSERT INTO item VALUES (1, 'a')")
                #expect(PG.ids(try await query.upToDate()) == [1])

                // A role that may neither create the publication nor replicate.
                try await PG.execute(writer, "CREATE ROLE plain LOGIN")
                var plain = configuration
                plain.username = "plain"
                await #expect { try await PostgresLiveDatabase.connect(plain, publication: "absent", logger: PG.logger) } throws: {
                    guard case let .publicationMissing("absent", error) = $0 as? PostgresLiveQueryError else { return false }
                    return error?.serverInfo?[.sqlState] == "42501" && "\($0)".contains("CREATE PUBLICATION")
                }
                await #expect { try await PostgresLiveDatabase.connect(plain, logger: PG.logger) } throws: {
                    if case .replicationSlot = $0 as? PostgresLiveQueryError { return "\($0)".contains("REPLICATION") } else { return false }
                }
                try await PG.execute(writer, "CREATE PUBLICATION some_tables FOR TABLE loose")
                let narrow = try await PostgresLiveDatabase.connect(configuration, publication: "some_tables", logger: PG.logger)
                await #expect { try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self), in: narrow) } throws: {
                    if case .tableNotPublished = $0 as? PostgresLiveQueryError { return true } else { return false }
                }
                await narrow.close()
            }
        }

        @Test("a persistent slot survives the process that made it; a temporary one goes with its connection")
        func slots() async throws {
            try await Self.withDatabase("CREATE TABLE item (id bigint PRIMARY KEY)") { configuration, writer, database in
                let durable = try await PostgresLiveDatabase.connect(configuration, slot: .persistent("livelist_test_instance"), logger: PG.logger)
                await durable.close()
                await database.close()
                try await Task.sleep(for: .milliseconds(200))
                let slots = try await PG.strings(writer, "SELECT slot_name::text FROM pg_replication_slots WHERE database = current_database()")
                #expect(slots == ["livelist_test_instance"])
                let again = try await PostgresLiveDatabase.connect(configuration, slot: .persistent("livelist_test_instance"), logger: PG.logger)
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(table: "item", as: Int64.self), in: again)
                try await PG.execute(writer, "INSERT INTO item VALUES (7)")
                #expect(PG.ids(try await query.upToDate()) == [7])
                await again.close()
                try await PG.execute(writer, "SELECT pg_drop_replication_slot('livelist_test_instance')")
            }
        }
    }
}
