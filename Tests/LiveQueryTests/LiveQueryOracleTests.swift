import Foundation
import GRDB
import ListDiff
import ListTesting
import Testing
@testable import LiveQuery

/// Random workloads; after every commit the delivered changesets, applied to the strict headless
/// view, must turn the previous state into exactly what a fresh SELECT returns.
@MainActor
struct LiveQueryOracleTests {
    struct Scenario: CustomStringConvertible, Sendable {
        var name: String
        var request: LiveQueryRequest
        /// The same query written by hand, ORDER BY … id, selecting id, section key, version.
        var oracleSQL: String
        var refetchThreshold = 6
        var expectsIncremental = true
        var expectsIncrementalMode = true
        var usesPool = false
        var customCollation = false
        /// Scenarios with the same workload number run the same random workload.
        var workload = 0
        var description: String { name }
    }

    nonisolated static let scenarios: [Scenario] = [
        Scenario(
            name: "NOCASE name, filter, version column",
            request: LiveQueryRequest(table: "item", filter: .init("flag = ?", arguments: [1]), sort: [SortTerm("name")], version: "version"),
            oracleSQL: "SELECT id, NULL, version FROM item WHERE flag = 1 ORDER BY name, id"),
        Scenario(
            name: "mixed-type score DESC NULLS FIRST, then name; no version column; pool",
            request: LiveQueryRequest(table: "item", sort: [SortTerm("score", .descending, nulls: .first), SortTerm("name", .ascending)]),
            oracleSQL: "SELECT id, NULL, NULL FROM item ORDER BY score DESC NULLS FIRST, name ASC, id",
            usesPool: true),
        Scenario(
            name: "sections by grp, then score",
            request: LiveQueryRequest(table: "item", sort: [SortTerm("grp"), SortTerm("score")], section: "grp", version: "version"),
            oracleSQL: "SELECT id, grp, version FROM item ORDER BY grp, score, id"),
        Scenario(
            name: "RTRIM name DESC, filter on score",
            request: LiveQueryRequest(table: "item", filter: .init("score IS NOT NULL"), sort: [SortTerm("name", .descending, collation: .rtrim)], version: "version"),
            oracleSQL: "SELECT id, NULL, version FROM item WHERE score IS NOT NULL ORDER BY name COLLATE RTRIM DESC, id"),
        Scenario(
            name: "every commit refetched (fallback path)",
            request: LiveQueryRequest(table: "item", filter: .init("flag = ?", arguments: [1]), sort: [SortTerm("name")], version: "version"),
            oracleSQL: "SELECT id, NULL, version FROM item WHERE flag = 1 ORDER BY name, id",
            refetchThreshold: 0, expectsIncremental: false, expectsIncrementalMode: true,
            workload: 0),
        Scenario(
            name: "filter reading another table",
            request: LiveQueryRequest(table: "item", filter: .init("grp IN (SELECT name FROM enabled_group)"), sort: [SortTerm("score")], version: "version"),
            oracleSQL: "SELECT id, NULL, version FROM item WHERE grp IN (SELECT name FROM enabled_group) ORDER BY score, id"),
        Scenario(
            name: "custom collation (refetch mode)",
            request: LiveQueryRequest(table: "item", sort: [SortTerm("name", collation: .custom("reversed"))], version: "version"),
            oracleSQL: "SELECT id, NULL, version FROM item ORDER BY name COLLATE reversed, id",
            expectsIncremental: false, expectsIncrementalMode: false, customCollation: true),
    ]

    static func makeWriter(_ scenario: Scenario) throws -> any DatabaseWriter {
        var configuration = Configuration()
        if scenario.customCollation {
            configuration.prepareDatabase { db in
                db.add(collation: DatabaseCollation("reversed") { lhs, rhs in
                    lhs == rhs ? .orderedSame : (lhs > rhs ? .orderedAscending : .orderedDescending)
                })
            }
        }
        let path = try TestDatabase.path()
        return scenario.usesPool ? try DatabasePool(path: path, configuration: configuration) : try DatabaseQueue(path: path, configuration: configuration)
    }

    /// What a fresh query says the list shows: sections of (id, version).
    static func oracle(_ writer: any DatabaseWriter, _ scenario: Scenario) throws -> LiveSnapshot {
        let rows = try writer.read { db in try Row.fetchAll(db, sql: scenario.oracleSQL) }
        var sections: [SnapshotSection<LiveSection, LiveRow>] = []
        let sectioned = scenario.request.section != nil
        for row in rows {
            let key = sectioned ? SQLValue(row[1] as DatabaseValue) : .null
            if sections.last?.model.id != key || sections.isEmpty {
                sections.append(SnapshotSection(LiveSection(id: key), items: []))
            }
            sections[sections.count - 1].items.append(LiveRow(id: row[0], version: SQLValue(row[2] as DatabaseValue)))
        }
        if !sectioned && sections.isEmpty { sections = [SnapshotSection(LiveSection(id: .null), items: [])] }
        return LiveSnapshot(sections: sections)
    }

    static func shape(_ snapshot: LiveSnapshot, versions: Bool) -> [[String]] {
        snapshot.sections.map { section in
            ["§\(section.model.id)"] + section.items.map { versions ? "\($0.id)v\($0.version)" : "\($0.id)" }
        }
    }

    @Test("after every commit the view, driven only by changesets, equals a fresh query", arguments: scenarios)
    func viewFollowsDatabase(scenario: Scenario) async throws {
        // The incremental and the refetch scenario of one query share their workload (workload 0).
        let number = Self.scenarios.firstIndex { $0.name == scenario.name } ?? 0
        let seed: UInt64 = 0x11FE_2026 &+ UInt64(scenario.workload == 0 && number == 4 ? 0 : number)
        print("LiveQueryOracleTests(\(scenario.name)): seed \(seed)")
        var random = SeededRandomNumberGenerator(seed: seed)
        let writer = try Self.makeWriter(scenario)
        try await writer.write { db in
            try db.execute(sql: TestDatabase.schema)
        }
        let setupSeed = random.next()
        try await writer.write { db in
            var random = SeededRandomNumberGenerator(seed: setupSeed)
            for _ in 0..<40 { try TestDatabase.insertRandomRow(db, &random) }
        }
        let log = EventLog()
        let query = try await LiveQuery.open(
            scenario.request, in: writer,
            options: .init(refetchThreshold: scenario.refetchThreshold, dataVersionPollInterval: nil),
            callbackQueue: nil, onEvent: { log.append($0) })
        #expect((query.mode == .incremental) == scenario.expectsIncrementalMode, "\(query.mode)")
        let versions = scenario.request.version != nil
        #expect(Self.shape(query.initialResult.snapshot(), versions: versions) == Self.shape(try Self.oracle(writer, scenario), versions: versions))

        let dataSource = SnapshotDataSource(query.initialResult.snapshot())
        let view = HeadlessListView(dataSource: dataSource)
        view.layoutIfNeeded()
        var incremental = 0, refetched = 0
        for step in 0..<160 {
            let operations = Int.random(in: 0..<10, using: &random) == 0 ? 12 : Int.random(in: 1...4, using: &random)
            let rollback = Int.random(in: 0..<10, using: &random) == 0
            let stepSeed = random.next()
            struct Rollback: Error {}
            do {
                try await writer.write { db in
                    var random = SeededRandomNumberGenerator(seed: stepSeed)
                    for _ in 0..<operations { try TestDatabase.randomOperation(db, &random) }
                    if rollback { throw Rollback() }
                }
            } catch is Rollback {}
            for event in log.drain() {
                switch event {
                case let .update(update):
                    if case .incremental = update.path { incremental += 1 } else { refetched += 1 }
                    if rollback { Issue.record("a rolled-back transaction produced a change, step \(step)") }
                    do {
                        try view.apply(update.changeset, to: dataSource)
                    } catch {
                        Issue.record("\(error), seed \(seed), step \(step)")
                        return
                    }
                    #expect(Self.shape(update.result.snapshot(), versions: versions) == Self.shape(dataSource.snapshot, versions: versions), "step \(step)")
                case let .failure(error):
                    Issue.record("\(error), step \(step)")
                }
            }
            let expected = Self.shape(try Self.oracle(writer, scenario), versions: versions)
            let shown = Self.shape(dataSource.snapshot, versions: versions)
            #expect(shown == expected, "seed \(seed), step \(step)")
            let stale = view.staleCells()
            #expect(stale.isEmpty, "seed \(seed), step \(step)")
            if let path = stale.first {
                print("DEBUG stale \(path): view \(String(describing: view.cellContent(at: path))) source \(dataSource.snapshot[path])")
                return
            }
            if shown != expected { return }
        }
        if scenario.expectsIncremental { #expect(incremental > 0) }
        if !scenario.expectsIncremental { #expect(incremental == 0 && refetched > 0) }
        query.cancel()
    }
}
