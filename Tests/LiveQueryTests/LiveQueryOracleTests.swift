import Foundation
import GRDB
import ListDiff
import ListTesting
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

struct Rollback: Error {}

/// Random hostile workloads: after every commit — by this connection or another one — the
/// delivered changesets, applied to the strict headless view, must turn the previous state into
/// exactly what a fresh SELECT returns: the same rows in the same sections and order, and every
/// row whose content changed reloaded.
@MainActor
struct LiveQueryOracleTests {
    struct Scenario: CustomStringConvertible, Sendable {
        var name: String
        var request: LiveQueryRequest<Int64>
        /// The identity column when it is not the rowid (decoded as `String`).
        var identityColumn: String?
        /// The query written by hand, without ORDER BY's tie-breaker.
        var oracleFilter: String
        var oracleOrder: String
        /// The section column and how it is normalized, when sectioned.
        var section: (column: String, collation: SortTerm.Collation)?
        var refetchThreshold = 1_000
        var expectsIncrementalMode = true
        var expectsIncrementalUpdates = true
        var customCollation = false
        /// How often a step writes through another connection (then asks the query to look).
        var externalWrites = 6
        var description: String { name }
    }

    nonisolated static let scenarios: [Scenario] = [
        Scenario(
            name: "NOCASE name, filter, version column",
            request: LiveQueryRequest(table: "item", filter: .init("flag = ?", arguments: [1]), sort: [SortTerm("name")], version: "version"),
            oracleFilter: "flag = 1", oracleOrder: "name"),
        Scenario(
            name: "mixed-type score DESC NULLS FIRST, then name; no version column",
            request: LiveQueryRequest(table: "item", sort: [SortTerm("score", .descending, nulls: .first), SortTerm("name", .ascending)]),
            oracleFilter: "1", oracleOrder: "score DESC NULLS FIRST, name ASC"),
        Scenario(
            name: "sections by grp (canonically equivalent keys apart), then score",
            request: LiveQueryRequest(table: "item", sort: [SortTerm("grp"), SortTerm("score")], section: "grp", version: "version"),
            oracleFilter: "1", oracleOrder: "grp, score", section: ("grp", .binary)),
        Scenario(
            name: "sections by NOCASE name, no version column",
            request: LiveQueryRequest(table: "item", filter: .init("score IS NOT NULL"), sort: [SortTerm("name", .descending), SortTerm("score")], section: "name"),
            oracleFilter: "score IS NOT NULL", oracleOrder: "name DESC, score", section: ("name", .nocase)),
        Scenario(
            name: "RTRIM name DESC",
            request: LiveQueryRequest(table: "item", sort: [SortTerm("name", .descending, collation: .rtrim)], version: "version"),
            oracleFilter: "1", oracleOrder: "name COLLATE RTRIM DESC"),
        Scenario(
            name: "every commit refetched, no version column",
            request: LiveQueryRequest(table: "item", filter: .init("flag = ?", arguments: [1]), sort: [SortTerm("name")]),
            oracleFilter: "flag = 1", oracleOrder: "name", refetchThreshold: 0, expectsIncrementalUpdates: false),
        Scenario(
            name: "filter reading another table",
            request: LiveQueryRequest(table: "item", filter: .init("grp IN (SELECT name FROM enabled_group)"), sort: [SortTerm("score")], version: "version"),
            oracleFilter: "grp IN (SELECT name FROM enabled_group)", oracleOrder: "score"),
        Scenario(
            name: "filter reading its own table (refetch mode)",
            request: LiveQueryRequest(table: "item", filter: .init("flag >= (SELECT avg(flag) FROM item)"), sort: [SortTerm("name")], version: "version"),
            oracleFilter: "flag >= (SELECT avg(flag) FROM item)", oracleOrder: "name",
            expectsIncrementalMode: false, expectsIncrementalUpdates: false),
        Scenario(
            name: "custom collation (refetch mode)",
            request: LiveQueryRequest(table: "item", sort: [SortTerm("name", collation: .custom("reversed"))], version: "version"),
            oracleFilter: "1", oracleOrder: "name COLLATE reversed",
            expectsIncrementalMode: false, expectsIncrementalUpdates: false, customCollation: true),
        Scenario(
            name: "identity column code (TEXT, UNIQUE), sections by grp",
            request: LiveQueryRequest(table: "item", filter: .init("code IS NOT NULL"), sort: [SortTerm("grp"), SortTerm("score")], section: "grp"),
            identityColumn: "code",
            oracleFilter: "code IS NOT NULL", oracleOrder: "grp, score", section: ("grp", .binary)),
    ]

    nonisolated static let contentColumns = ["id", "name", "score", "flag", "version", "grp", "note", "code", "owner_id"]

    static func makeWriter(_ scenario: Scenario, path: String) throws -> DatabaseQueue {
        var configuration = TestDatabase.patient
        if scenario.customCollation {
            configuration.prepareDatabase { db in
                db.add(collation: DatabaseCollation("reversed") { lhs, rhs in
                    lhs == rhs ? .orderedSame : (lhs > rhs ? .orderedAscending : .orderedDescending)
                })
            }
        }
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    /// A value as stored, decoded from `typeof` and `hex` — independently of LiveList's reader.
    nonisolated static func value(type: String, hex: String, quoted: String) -> SQLValue {
        func bytes() -> [UInt8] {
            var result: [UInt8] = []
            var index = hex.startIndex
            while index < hex.endIndex {
                let next = hex.index(index, offsetBy: 2)
                result.append(UInt8(hex[index..<next], radix: 16) ?? 0)
                index = next
            }
            return result
        }
        switch type {
        case "integer": return .integer(Int64(quoted) ?? 0)
        case "real": return .real(Double(quoted) ?? 0)
        case "text": return .text(SQLText(bytes: bytes()))
        case "blob": return .blob(bytes())
        default: return .null
        }
    }

    /// The test's own section normalization: NOCASE folds ASCII letters only, RTRIM drops
    /// trailing spaces.
    nonisolated static func normalized(_ value: SQLValue, _ collation: SortTerm.Collation) -> SQLValue {
        guard case let .text(text) = value else { return value }
        switch collation {
        case .nocase: return .text(SQLText(bytes: text.bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 32 : $0 }))
        case .rtrim:
            var bytes = text.bytes
            while bytes.last == 0x20 { bytes.removeLast() }
            return .text(SQLText(bytes: bytes))
        default: return value
        }
    }

    /// What a fresh SELECT says: rows in order (ties broken by the identity, compared as stored),
    /// with their section keys and exact contents.
    nonisolated static func oracle(_ db: Database, _ scenario: Scenario) throws -> [OracleRow] {
        let identity = scenario.identityColumn ?? "id"
        let sectionColumn = scenario.section?.column ?? "NULL"
        // With a version column the app promises it changes with the content: the content is the
        // version and the values shown by the sort; without one, every column.
        let columns = scenario.request.version.map { [$0] + scenario.request.sort.map(\.column) } ?? contentColumns
        let content = columns.map { "typeof(\($0)) || ':' || hex(\($0))" }.joined(separator: " || '|' || ")
        let sql = """
            SELECT typeof(\(identity)), hex(\(identity)), quote(\(identity)), typeof(\(sectionColumn)), hex(\(sectionColumn)), quote(\(sectionColumn)), \(content)
            FROM item WHERE \(scenario.oracleFilter) ORDER BY \(scenario.oracleOrder), \(identity) COLLATE BINARY
            """
        return try Row.fetchAll(db, sql: sql).map { row in
            let section = value(type: row[3], hex: row[4], quoted: row[5])
            return OracleRow(identity: value(type: row[0], hex: row[1], quoted: row[2]),
                             section: scenario.section.map { normalized(section, $0.collation) } ?? .null,
                             content: row[6])
        }
    }

    @Test("after every commit the view, driven only by changesets, equals a fresh query", arguments: scenarios)
    func viewFollowsDatabase(scenario: Scenario) async throws {
        if let column = scenario.identityColumn {
            var request = LiveQueryRequest<String>(table: "item", identity: column, as: String.self)
            request.filter = scenario.request.filter.map { .init($0.sql, arguments: $0.arguments) }
            request.sort = scenario.request.sort
            request.section = scenario.request.section
            request.version = scenario.request.version
            try await run(scenario, request: request)
        } else {
            try await run(scenario, request: scenario.request)
        }
    }

    func run<ID: LiveIdentity>(_ scenario: Scenario, request: LiveQueryRequest<ID>) async throws {
        let number = Self.scenarios.firstIndex { $0.name == scenario.name } ?? 0
        let seed: UInt64 = 0x11FE_2026 &+ UInt64(number)
        print("LiveQueryOracleTests(\(scenario.name)): seed \(seed)")
        var random = SeededRandomNumberGenerator(seed: seed)
        let path = try TestDatabase.path()
        let writer = try Self.makeWriter(scenario, path: path)
        let other = try Self.makeWriter(scenario, path: path)
        try await writer.write { db in try db.execute(sql: TestDatabase.schema) }
        let setupSeed = random.next()
        try await writer.write { db in
            var random = SeededRandomNumberGenerator(seed: setupSeed)
            for _ in 0..<40 { try TestDatabase.insertRandomRow(db, &random) }
        }
        let log = EventLog<ID>()
        let query = try await LiveQuery<ID>.open(
            request, in: writer, options: .init(refetchThreshold: scenario.refetchThreshold, dataVersionPollInterval: nil),
            callbackQueue: nil, onEvent: { log.append($0) })
        #expect((query.mode == .incremental) == scenario.expectsIncrementalMode, "\(query.mode)")

        let harness = OracleHarness(query.initialResult, expected: try await writer.read { db in try Self.oracle(db, scenario) })
        func check(_ step: Int) -> Bool {
            let context = "seed \(seed), step \(step)"
            // The delivered result is internally consistent.
            let result = query.latestResult
            var total = 0
            for section in 0..<result.sectionCount { total += result.itemCount(inSection: section) }
            #expect(total == result.count, "section counts \(total) ≠ count \(result.count), \(context)")
            if let row = result.row(at: step % max(1, result.count)) {
                #expect(result.path(ofItem: row.id) == result.itemPath(ofPosition: step % max(1, result.count)), "path(ofItem:), \(context)")
            }
            return harness.check(context)
        }
        for step in 0..<150 {
            let operations = Int.random(in: 0..<10, using: &random) == 0 ? 8 : Int.random(in: 1...3, using: &random)
            let rollback = Int.random(in: 0..<10, using: &random) == 0
            let external = Int.random(in: 0..<scenario.externalWrites, using: &random) == 0
            let stepSeed = random.next()
            _ = try await randomTransaction(on: external ? other : writer, operations: operations, seed: stepSeed, rollback: rollback, TestDatabase.randomOperation)
            if external { try await query.checkForExternalChanges() }
            let expected = try await writer.read { db in try Self.oracle(db, scenario) }
            guard harness.step(expecting: expected, events: log.drain(), rolledBack: rollback && !external, context: "seed \(seed), step \(step)") else { return }
            if !check(step) { return }
        }
        // Rows whose identity is NULL or repeats are reported, never silently dropped: this
        // workload has none once the filter holds.
        #expect(harness.tally.failures.isEmpty, "\(harness.tally.failures.prefix(3))")
        if scenario.expectsIncrementalUpdates { #expect(harness.tally.incremental > 0) } else { #expect(harness.tally.incremental == 0 && harness.tally.refetched > 0) }
        print("LiveQueryOracleTests(\(scenario.name)): \(harness.tally.incremental) incremental, \(harness.tally.refetched) refetched updates")
        query.cancel()
    }
}
