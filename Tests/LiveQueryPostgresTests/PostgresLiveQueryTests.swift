import Foundation
import ListDiff
import ListTesting
import LiveQueryCore
@testable import LiveQueryPostgres
import Logging
import PostgresNIO
import ScratchPostgres
import Testing

/// A live query's updates as they arrive, and the strict headless list they are applied to.
@MainActor
final class PostgresListFollower<ID: LiveIdentity> {
    let dataSource: SnapshotDataSource<LiveSection, LiveRow<ID>>
    let view: HeadlessListView<LiveRow<ID>, LiveSection>
    private var task: Task<Void, Never>?
    private(set) var updates: [LiveQueryUpdate<ID>] = []
    private(set) var failures: [LiveQueryError] = []
    private var initialState: ListStateID?
    /// Whether the events started from a later result than the query opened with.
    private(set) var startedLater = false

    init(_ query: PostgresLiveQuery<ID>) {
        initialState = query.initialResult.stateID
        dataSource = SnapshotDataSource(query.initialResult.snapshot())
        view = HeadlessListView(dataSource: dataSource)
        view.layoutIfNeeded()
        let events = query.events
        task = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                switch event {
                case let .initial(result): self.start(at: result)
                case let .update(update): self.receive(update)
                case let .failure(error): self.failures.append(error)
                }
            }
        }
    }

    /// The events start from the result when they were asked for, which may be later than the one
    /// the query opened with (a first screen completed meanwhile): the list starts there.
    private func start(at result: LiveResult<ID>) {
        guard result.stateID != initialState else { return }
        initialState = result.stateID
        startedLater = true
        dataSource.snapshot = result.snapshot()
        do {
            try view.reloadData()
            view.layoutIfNeeded()
        } catch {
            Issue.record("the headless view refused a reload: \(error)")
        }
    }

    private func receive(_ update: LiveQueryUpdate<ID>) {
        updates.append(update)
        do {
            try view.apply(update.changeset, to: dataSource)
        } catch {
            Issue.record("the headless view refused a changeset: \(error)")
        }
    }

    /// Waits (bounded) until the update leading to `result`'s state has arrived (or `result` is
    /// the state the query opened with), so what came before it — failures too — has arrived.
    func waitFor(_ result: LiveResult<ID>) async {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if (updates.last?.result.stateID ?? initialState) == result.stateID { return }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    func stop() { task?.cancel() }
}

enum PG {
    static let logger = Logger(label: "livelist.tests.postgres")

    static func ids<ID>(_ result: LiveResult<ID>) -> [ID] { result.rows(in: 0..<result.count).map(\.id) }

    static func execute(_ connection: PostgresConnection, _ sql: String, _ binds: PostgresBindings = PostgresBindings()) async throws {
        try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
    }

    static func int64s(_ connection: PostgresConnection, _ sql: String, _ binds: PostgresBindings = PostgresBindings()) async throws -> [Int64] {
        var values: [Int64] = []
        for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).decode(Int64.self) {
            values.append(value)
        }
        return values
    }

    /// The query's result once a round succeeds (after a server restart, say), within `seconds`.
    static func upToDate<ID>(_ query: PostgresLiveQuery<ID>, within seconds: Int = 60) async throws -> LiveResult<ID>? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            do {
                return try await query.upToDate()
            } catch {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        return nil
    }

    static func strings(_ connection: PostgresConnection, _ sql: String) async throws -> [String] {
        var values: [String] = []
        for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(String.self) {
            values.append(value)
        }
        return values
    }
}

extension PostgresDatabaseTests {
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresLiveQueryTests {
        static let schema = """
            CREATE TABLE item (
                id bigint PRIMARY KEY,
                name text COLLATE "C",
                score numeric,
                ratio double precision,
                flag boolean,
                at timestamptz,
                day date,
                token uuid,
                raw bytea,
                grp text COLLATE "C",
                revision integer NOT NULL DEFAULT 0
            )
            """

        /// Text in every normalization form and case, with emoji and combining marks: compared by bytes under "C".
        static let names = ["Zoë", "Zoe\u{308}", "zoe", "ZOE", "Émile", "E\u{301}mile", "émile", "😀", "a", "A", "", " ", "ß", "SS", "ﬁ", "fi", "Å", "A\u{30A}", "\u{212B}"]
        static let numerics = ["0", "0.0", "-0.000", "1", "1.00", "-1", "0.1", "0.10000000000000000000000001", "99999999999999999999.99999",
                               "-99999999999999999999.99999", "NaN", "Infinity", "-Infinity", "123456789012345678901234567890", "1e-20", "-1e-20"]
        static let ratios = ["0", "-0", "1.5", "-1.5", "'NaN'", "'Infinity'", "'-Infinity'", "1e300", "-1e-300", "NULL"]

        static func randomLiteral(_ choices: [String], _ random: inout some RandomNumberGenerator) -> String {
            Int.random(in: 0..<8, using: &random) == 0 ? "NULL" : choices[Int.random(in: 0..<choices.count, using: &random)]
        }

        static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

        static func randomRowValues(_ id: Int64, _ random: inout some RandomNumberGenerator) -> String {
            let name = Int.random(in: 0..<8, using: &random) == 0 ? "NULL" : quoted(names[Int.random(in: 0..<names.count, using: &random)])
            let score = randomLiteral(numerics.map { "'\($0)'::numeric" }, &random)
            let ratio = ratios[Int.random(in: 0..<ratios.count, using: &random)]
            let flag = randomLiteral(["true", "false"], &random)
            let at = randomLiteral(["'2026-01-01 00:00:00+00'", "'1999-12-31 23:59:59.999999+00'", "'infinity'", "'-infinity'", "'2026-01-01 00:00:00.000001+00'"], &random)
            let day = randomLiteral(["'2000-01-01'", "'1970-01-01'", "'infinity'", "'4000-02-29'"], &random)
            let token = randomLiteral(["'00000000-0000-0000-0000-000000000000'", "'ffffffff-ffff-ffff-ffff-ffffffffffff'", "'7f000000-0000-0000-0000-000000000001'", "'80000000-0000-0000-0000-000000000000'"], &random)
            let raw = randomLiteral(["'\\x00'::bytea", "'\\x0000'::bytea", "'\\x'::bytea", "'\\xff'::bytea", "'\\x7f00'::bytea"], &random)
            let grp = randomLiteral(["'a'", "'b'", "'B'", "'é'", "'e\u{301}'"], &random)
            return "(\(id), \(name), \(score), \(ratio), \(flag), \(at), \(day), \(token), \(raw), \(grp), \(Int.random(in: 0..<1000, using: &random)))"
        }

        /// One random transaction: inserts, updates of any column (including the key), deletes; a
        /// quarter roll back.
        static func randomTransaction(_ writer: PostgresConnection, _ random: inout some RandomNumberGenerator) async throws -> Bool {
            var statements: [String] = []
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let id = Int64.random(in: 1...60, using: &random)
                switch Int.random(in: 0..<6, using: &random) {
                case 0, 1:
                    statements.append("INSERT INTO item VALUES \(randomRowValues(id, &random)) ON CONFLICT (id) DO UPDATE SET name = excluded.name, score = excluded.score, ratio = excluded.ratio, grp = excluded.grp, revision = item.revision + 1")
                case 2:
                    let values = randomRowValues(id, &random)
                    statements.append("UPDATE item SET (id, name, score, ratio, flag, at, day, token, raw, grp, revision) = \(values) WHERE id = \(id)")
                case 3:
                    statements.append("UPDATE item SET name = \(quoted(names[Int.random(in: 0..<names.count, using: &random)])), revision = revision + 1 WHERE id % 7 = \(id % 7)")
                case 4:
                    let target = Int64.random(in: 61...80, using: &random)
                    statements.append("UPDATE item SET id = \(target) WHERE id = \(id) AND NOT EXISTS (SELECT 1 FROM item WHERE id = \(target))")
                default:
                    statements.append("DELETE FROM item WHERE id = \(id)")
                }
            }
            let rollback = Int.random(in: 0..<4, using: &random) == 0
            try await PG.execute(writer, "BEGIN")
            for statement in statements { try await PG.execute(writer, statement) }
            try await PG.execute(writer, rollback ? "ROLLBACK" : "COMMIT")
            return !rollback
        }

        static let sorts: [(String, [SortTerm], String?)] = [
            ("name, id", [SortTerm("name")], nil),
            ("name DESC, id", [SortTerm("name", .descending)], nil),
            ("score NULLS FIRST, id", [SortTerm("score", nulls: .first)], nil),
            ("score DESC NULLS LAST, id", [SortTerm("score", .descending, nulls: .last)], nil),
            ("ratio, id", [SortTerm("ratio")], nil),
            ("ratio DESC, id", [SortTerm("ratio", .descending)], nil),
            ("flag, at DESC, id", [SortTerm("flag"), SortTerm("at", .descending)], nil),
            ("day, token, raw, id", [SortTerm("day"), SortTerm("token"), SortTerm("raw")], nil),
            ("grp, name, id", [SortTerm("grp"), SortTerm("name")], "grp"),
        ]

        @Test("every query equals a fresh SELECT after every commit — random transactions, rollbacks, key changes, hostile values, every sort type")
        func oracle() async throws {
            guard let cluster = try await PostgresCluster.running() else { return }
            try await PostgresCluster.exclusively {
                let (configuration, writer) = try await PostgresCluster.database(cluster)
                defer { Task { try? await writer.close() } }
                try await PG.execute(writer, Self.schema)
                let seed = UInt64.random(in: 0...UInt64.max)
                print("PostgreSQL oracle seed \(seed)")
                var random = SeededRandomNumberGenerator(seed: seed)
                for id in 1...30 { try await PG.execute(writer, "INSERT INTO item VALUES \(Self.randomRowValues(Int64(id), &random))") }
                let database = try await PostgresLiveDatabase.connect(configuration, logger: PG.logger)
                var filterArguments = PostgresBindings()
                filterArguments.append(Int64(50))
                var queries: [(String, PostgresLiveQuery<Int64>, PostgresListFollower<Int64>)] = []
                for (order, sort, section) in Self.sorts {
                    let request = PostgresLiveQueryRequest(table: "item", as: Int64.self, filter: "id < $1 OR name IS NULL", arguments: filterArguments,
                                                           sort: sort, section: section)
                    let query = try await PostgresLiveQuery.open(request, in: database)
                    #expect(query.mode == .incremental, "\(order)")
                    queries.append((order, query, await PostgresListFollower(query)))
                }
                for step in 0..<60 {
                    let committed = try await Self.randomTransaction(writer, &random)
                    for (order, query, follower) in queries {
                        let result = try await query.upToDate()
                        let expected = try await PG.int64s(writer, "SELECT id FROM item WHERE id < 50 OR name IS NULL ORDER BY \(order)")
                        #expect(PG.ids(result) == expected, "step \(step) (\(committed ? "commit" : "rollback")), ORDER BY \(order), seed \(seed)")
                        await follower.waitFor(result)
                        await MainActor.run {
                            #expect(follower.view.violations.isEmpty, "ORDER BY \(order), seed \(seed)")
                            #expect(follower.dataSource.snapshot.itemCount == result.count, "ORDER BY \(order), seed \(seed)")
                        }
                    }
                }
                let (_, grouped, _) = queries[queries.count - 1]
                let sections = try await PG.strings(writer, "SELECT coalesce(encode(convert_to(grp, 'UTF8'), 'hex'), 'null') FROM (SELECT DISTINCT grp FROM item WHERE id < 50 OR name IS NULL) g ORDER BY grp")
                #expect(grouped.latestResult.sectionCount == sections.count)
                for (order, query, follower) in queries {
                    #expect(query.statistics.refetches == 0, "ORDER BY \(order) refetched")
                    await MainActor.run { #expect(follower.failures.isEmpty) }
                    await follower.stop()
                }
                await database.close()
            }
        }
    }
}
