import Foundation
import GRDB
import ListDiff
import ListTesting
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// Live queries written as SQL — joins, TEXT and UUID identities, and every shape that refetches —
/// under random writes to every table they read: after every commit the strict headless view,
/// driven only by the delivered changesets, equals a fresh SELECT, and no cell is stale.
@MainActor
struct SelectQueryOracleTests {
    enum IdentityKind: Sendable { case int64, string, uuid }

    struct Scenario: CustomStringConvertible, Sendable {
        var name: String
        var sql: String
        var arguments: StatementArguments = StatementArguments()
        var identity: String?
        var kind: IdentityKind = .int64
        var section: String?
        var sectionCollation: SortTerm.Collation = .binary
        /// The expected rows, in order: columns `oid` (identity), `osec` (section key or NULL) and
        /// the content columns.
        var oracle: String
        var content: [String]
        /// `nil` for the incremental path, else a part of the refetch reason.
        var refetchReason: RefetchReason.Shape?
        var description: String { name }
    }

    nonisolated static let trackColumns = ["t_id", "t_uuid", "t_blob", "t_title", "t_album", "t_rank", "t_flag"]
    nonisolated static let trackSelect = "track.id AS t_id, track.uuid AS t_uuid, track.uuid_blob AS t_blob, track.title AS t_title, track.album_id AS t_album, track.rank AS t_rank, track.flag AS t_flag"

    nonisolated static let scenarios: [Scenario] = [
        Scenario(
            name: "track ⋈ album, sorted by the album's title then the track's",
            sql: "SELECT track.*, album.title AS album_title FROM track JOIN album ON album.id = track.album_id WHERE track.flag = ? ORDER BY album.title, track.title",
            arguments: [1],
            oracle: "SELECT track.id AS oid, NULL AS osec, \(trackSelect), album.title AS a_title FROM track JOIN album ON album.id = track.album_id WHERE track.flag = 1 ORDER BY album.title, track.title, track.id",
            content: trackColumns + ["a_title"]),
        Scenario(
            name: "track ⟕ album ⟕ artist, sections by the artist's NOCASE name, TEXT identity",
            sql: """
                SELECT track.title, track.rank, album.title, artist.name FROM track
                LEFT JOIN album ON album.id = track.album_id
                LEFT JOIN artist ON artist.id = album.artist_id
                ORDER BY artist.name, album.title DESC, track.rank DESC NULLS LAST
                """,
            identity: "track.uuid", kind: .string, section: "artist.name", sectionCollation: .nocase,
            oracle: """
                SELECT track.uuid AS oid, artist.name AS osec, track.title AS c1, track.rank AS c2, album.title AS c3, artist.name AS c4 FROM track
                LEFT JOIN album ON album.id = track.album_id LEFT JOIN artist ON artist.id = album.artist_id
                ORDER BY artist.name, album.title DESC, track.rank DESC NULLS LAST, track.uuid COLLATE BINARY
                """,
            content: ["c1", "c2", "c3", "c4"]),
        Scenario(
            name: "aliases, key on the right of the equality, UUID (BLOB) identity, sorted by the artist's code",
            sql: """
                SELECT t.title AS song, a.title AS record, r.code FROM track AS t
                JOIN album AS a ON t.album_id = a.id JOIN artist r ON r.id = a.artist_id
                ORDER BY r.code COLLATE NOCASE, song, t.rank
                """,
            identity: "t.uuid_blob", kind: .uuid,
            oracle: """
                SELECT t.uuid_blob AS oid, NULL AS osec, t.title AS c1, a.title AS c2, r.code AS c3 FROM track AS t
                JOIN album AS a ON t.album_id = a.id JOIN artist r ON r.id = a.artist_id
                ORDER BY r.code COLLATE NOCASE, t.title, t.rank, t.uuid_blob COLLATE BINARY
                """,
            content: ["c1", "c2", "c3"]),
        Scenario(
            name: "GROUP BY (refetch)",
            sql: "SELECT album.id, album.title, count(track.id) AS tracks FROM album LEFT JOIN track ON track.album_id = album.id GROUP BY album.id ORDER BY album.title, album.id",
            identity: "id",
            oracle: "SELECT album.id AS oid, NULL AS osec, album.title AS c1, count(track.id) AS c2 FROM album LEFT JOIN track ON track.album_id = album.id GROUP BY album.id ORDER BY album.title, album.id",
            content: ["oid", "c1", "c2"], refetchReason: .groupBy),
        Scenario(
            name: "DISTINCT (refetch)",
            sql: "SELECT DISTINCT album_id FROM track WHERE album_id IS NOT NULL ORDER BY album_id",
            identity: "album_id",
            oracle: "SELECT DISTINCT album_id AS oid, NULL AS osec FROM track WHERE album_id IS NOT NULL ORDER BY album_id",
            content: ["oid"], refetchReason: .distinct),
        Scenario(
            name: "LIMIT (refetch)",
            sql: "SELECT id, title FROM track ORDER BY title, id LIMIT 10",
            oracle: "SELECT id AS oid, NULL AS osec, title AS c1 FROM track ORDER BY title, id LIMIT 10",
            content: ["oid", "c1"], refetchReason: .limit),
        Scenario(
            name: "UNION ALL (refetch)",
            sql: "SELECT uuid, title FROM track WHERE flag = 1 UNION ALL SELECT code, name FROM artist ORDER BY 2, 1",
            identity: "uuid", kind: .string,
            oracle: "SELECT uuid AS oid, NULL AS osec, title AS c1 FROM (SELECT uuid, title FROM track WHERE flag = 1 UNION ALL SELECT code, name FROM artist ORDER BY 2, 1)",
            content: ["oid", "c1"], refetchReason: .compoundSelect),
        Scenario(
            name: "window function (refetch)",
            sql: "SELECT id, title, row_number() OVER (ORDER BY rank, id) AS n FROM track ORDER BY title, id",
            oracle: "SELECT id AS oid, NULL AS osec, title AS c1, row_number() OVER (ORDER BY rank, id) AS c2 FROM track ORDER BY title, id",
            content: ["oid", "c1", "c2"], refetchReason: .windowFunction),
        Scenario(
            name: "one-to-many join (refetch)",
            sql: "SELECT album.id AS album_key, track.id AS track_key, track.title FROM album JOIN track ON track.album_id = album.id ORDER BY album.title, track.id",
            identity: "track_key",
            oracle: "SELECT track.id AS oid, NULL AS osec, album.id AS c1, track.title AS c2 FROM album JOIN track ON track.album_id = album.id ORDER BY album.title, track.id",
            content: ["oid", "c1", "c2"], refetchReason: .joinMeetsSeveralRows("track")),
        Scenario(
            name: "ORDER BY an expression (refetch)",
            sql: "SELECT id, title FROM track ORDER BY length(title), id",
            oracle: "SELECT id AS oid, NULL AS osec, title AS c1 FROM track ORDER BY length(title), id",
            content: ["oid", "c1"], refetchReason: .orderByExpression("length(title)")),
        Scenario(
            name: "a subquery over the base table (refetch)",
            sql: "SELECT id, title, rank FROM track WHERE rank > (SELECT avg(rank) FROM track WHERE typeof(rank) IN ('integer', 'real')) ORDER BY title, id",
            oracle: "SELECT id AS oid, NULL AS osec, title AS c1, rank AS c2 FROM track WHERE rank > (SELECT avg(rank) FROM track WHERE typeof(rank) IN ('integer', 'real')) ORDER BY title, id",
            content: ["oid", "c1", "c2"], refetchReason: .readsOwnTable("track")),
    ]

    nonisolated static func oracle(_ db: Database, _ scenario: Scenario) throws -> [OracleRow] {
        let content = scenario.content.map { "typeof(\($0)) || ':' || hex(\($0))" }.joined(separator: " || '|' || ")
        let sql = "SELECT typeof(oid), hex(oid), quote(oid), typeof(osec), hex(osec), quote(osec), \(content) FROM (\(scenario.oracle))"
        return try Row.fetchAll(db, sql: sql).map { row in
            let section = LiveQueryOracleTests.value(type: row[3], hex: row[4], quoted: row[5])
            return OracleRow(identity: LiveQueryOracleTests.value(type: row[0], hex: row[1], quoted: row[2]),
                             section: scenario.section == nil ? .null : LiveQueryOracleTests.normalized(section, scenario.sectionCollation),
                             content: row[6])
        }
    }

    @Test("after every commit to any table the view equals a fresh SELECT", arguments: scenarios)
    func viewFollowsDatabase(scenario: Scenario) async throws {
        switch scenario.kind {
        case .int64:
            try await run(scenario, LiveQueryRequest(sql: scenario.sql, arguments: scenario.arguments, identity: scenario.identity, as: Int64.self,
                                                     section: scenario.section))
        case .string:
            try await run(scenario, LiveQueryRequest(sql: scenario.sql, arguments: scenario.arguments, identity: scenario.identity, as: String.self,
                                                     section: scenario.section))
        case .uuid:
            try await run(scenario, LiveQueryRequest(sql: scenario.sql, arguments: scenario.arguments, identity: scenario.identity, as: UUID.self,
                                                     section: scenario.section))
        }
    }

    func run<ID: LiveIdentity>(_ scenario: Scenario, _ request: LiveQueryRequest<ID>) async throws {
        let number = Self.scenarios.firstIndex { $0.name == scenario.name } ?? 0
        let seed: UInt64 = 0x5E1E_C712 &+ UInt64(number)
        print("SelectQueryOracleTests(\(scenario.name)): seed \(seed)")
        var random = SeededRandomNumberGenerator(seed: seed)
        let path = try TestDatabase.path()
        let writer = try DatabaseQueue(path: path, configuration: TestDatabase.patient)
        let other = try DatabaseQueue(path: path, configuration: TestDatabase.patient)
        let setupSeed = random.next()
        try await writer.write { db in
            try db.execute(sql: MusicDatabase.schema)
            var random = SeededRandomNumberGenerator(seed: setupSeed)
            try MusicDatabase.populate(db, &random)
        }
        let log = EventLog<ID>()
        let query = try await LiveQuery<ID>.open(request, in: writer, options: .init(dataVersionPollInterval: nil), callbackQueue: nil,
                                                 onEvent: { log.append($0) })
        if let reason = scenario.refetchReason {
            guard case let .refetch(.request(shapes)) = query.mode else {
                Issue.record("\(scenario.name) is not refetched: \(query.mode)")
                return
            }
            #expect(shapes.contains(reason), "\(query.mode)")
        } else {
            #expect(query.mode == .incremental, "\(query.mode)")
        }

        let harness = OracleHarness(query.initialResult, expected: try await writer.read { db in try Self.oracle(db, scenario) })
        var commits = 0
        for step in 0..<120 {
            let operations = Int.random(in: 0..<10, using: &random) == 0 ? 6 : Int.random(in: 1...3, using: &random)
            let rollback = Int.random(in: 0..<10, using: &random) == 0
            let external = Int.random(in: 0..<8, using: &random) == 0
            let stepSeed = random.next()
            if try await randomTransaction(on: external ? other : writer, operations: operations, seed: stepSeed, rollback: rollback, MusicDatabase.randomOperation) {
                commits += 1
            }
            if external { try await query.checkForExternalChanges() }
            let expected = try await writer.read { db in try Self.oracle(db, scenario) }
            guard harness.step(expecting: expected, events: log.drain(), rolledBack: rollback && !external, context: "seed \(seed), step \(step)") else { return }
            if !harness.check("seed \(seed), step \(step)") { return }
        }
        #expect(harness.tally.failures.isEmpty, "\(harness.tally.failures.prefix(3))")
        if scenario.refetchReason == nil { #expect(harness.tally.incremental > 0) } else { #expect(harness.tally.incremental == 0 && harness.tally.refetched > 0) }
        print("SelectQueryOracleTests(\(scenario.name)): \(commits) commits, \(harness.tally.incremental) incremental, \(harness.tally.refetched) refetched updates, \(harness.expected.count) rows at the end")
        query.cancel()
    }
}

/// A joined row met by many result rows: one rename moves all of them, re-reads only them, and
/// the strict view follows.
@MainActor
@Suite(.timeLimit(.minutes(3)))
struct JoinedRenameTests {
    @Test("renaming an album of 300 tracks moves the 300 rows, reading 300 rows; switching to another request is one changeset")
    func renameMovesManyRows() async throws {
        let pool = try DatabasePool(path: try TestDatabase.path())
        try await pool.write { db in
            try db.execute(sql: MusicDatabase.schema)
            try db.execute(sql: "INSERT INTO album(id, title) VALUES (1, 'm'), (2, 'a'), (3, 'z')")
            for number in 0..<900 {
                try db.execute(sql: "INSERT INTO track(uuid, title, album_id) VALUES (?, ?, ?)",
                               arguments: ["u\(number)", "t\(number % 97)", number % 3 + 1])
            }
        }
        let sql = "SELECT track.title, album.title FROM track JOIN album ON album.id = track.album_id ORDER BY album.title, track.title"
        let log = EventLog<Int64>()
        let query = try await LiveQuery.open(LiveQueryRequest(sql: sql), in: pool, options: .init(dataVersionPollInterval: nil, firstScreenRows: nil),
                                             callbackQueue: nil, onEvent: { log.append($0) })
        defer { query.cancel() }
        let dataSource = OracleDataSource(query.initialResult)
        let view = HeadlessListView(dataSource: dataSource)
        view.layoutIfNeeded()
        let readBefore = query.statistics.rowsRead
        try await pool.write { db in try db.execute(sql: "UPDATE album SET title = 'b' WHERE id = 3") }   // from last to second
        let updates = log.updates
        #expect(updates.count == 1 && updates.first?.path == .incremental)
        #expect(query.statistics.rowsRead - readBefore == 300)
        for update in updates {
            #expect(update.changeset.changes.itemMoves.count == 300)
            try view.apply(update, to: dataSource)
        }
        let expected = try await pool.read { db in
            try Int64.fetchAll(db, sql: "SELECT track.id FROM track JOIN album ON album.id = track.album_id ORDER BY album.title, track.title, track.id")
        }
        let shown = (0..<view.numberOfItems(inSection: 0)).compactMap { view.cellContent(at: ItemPath(section: 0, item: $0))?.id }
        #expect(shown == expected && view.violations.isEmpty)

        // The criteria change to a refetched shape, and back: one changeset each, delivered even when empty.
        try await query.setRequest(LiveQueryRequest(sql: "SELECT album_id AS id, count(*) FROM track GROUP BY album_id ORDER BY album_id", identity: "id", as: Int64.self))
        #expect(query.mode == .refetch(reason: .request([.groupBy, .aggregate("count")])) && query.latestResult.count == 3, "\(query.mode)")
        try await query.setRequest(LiveQueryRequest(sql: sql))
        #expect(query.mode == .incremental && query.latestResult.count == 900)
    }
}
