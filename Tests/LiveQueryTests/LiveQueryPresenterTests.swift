import Foundation
import GRDB
import ListDiff
import ListPresenter
import ListTesting
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// A live query's changesets through the presenter's direct path and, for comparison, its
/// results through the diff path: both strict views must end every commit showing what a fresh
/// SELECT returns, and the direct path must never diff.
@MainActor
struct LiveQueryPresenterTests {
    typealias Presenter = ListPresenter<LiveSection, LiveRow<Int64>>

    static func shownIDs(_ presenter: Presenter) -> [Int64] {
        presenter.displayed.model.snapshot.sections.flatMap { $0.items.map(\.id) }
    }

    @Test("random workloads: the direct path and the diff path both follow a fresh SELECT; the direct path never diffs", arguments: [false, true])
    func directAndDiffPathsAgree(animated: Bool) async throws {
        let seed: UInt64 = 0xD1EC_7A7E &+ (animated ? 1 : 0)
        print("LiveQueryPresenterTests(animated: \(animated)): seed \(seed)")
        var random = SeededRandomNumberGenerator(seed: seed)
        let (queue, _) = try LiveQueryExactnessTests.makeQueue()
        let setupSeed = random.next()
        try await queue.write { db in
            var random = SeededRandomNumberGenerator(seed: setupSeed)
            for _ in 0..<60 { try TestDatabase.insertRandomRow(db, &random) }
        }
        let request = LiveQueryRequest(table: "item", sort: [SortTerm("grp"), SortTerm("score")], section: "grp", version: "version")
        let (query, log) = try await LiveQueryExactnessTests.open(request, queue, refetchThreshold: 6)
        let direct = Presenter(configuration: .init(reloadThreshold: 10_000))
        let (directView, directSource) = direct.attachHeadlessView(viewportRows: 8, sectionHeaderRows: 1)
        direct.replace(with: query.initialResult)
        directView.layoutIfNeeded()
        directView.completesBatchAnimationsImmediately = !animated
        let diffing = Presenter()
        let (diffView, diffSource) = diffing.attachHeadlessView(viewportRows: 8, sectionHeaderRows: 1)
        diffing.update(query.initialResult)
        diffView.layoutIfNeeded()
        var incremental = 0
        for step in 0..<150 {
            let operations = Int.random(in: 1...3, using: &random)
            let stepSeed = random.next()
            try await queue.write { db in
                var random = SeededRandomNumberGenerator(seed: stepSeed)
                for _ in 0..<operations { try TestDatabase.randomOperation(db, &random) }
            }
            for update in log.updates {
                if update.path == .incremental { incremental += 1 }
                direct.apply(update.changeset)
                diffing.update(update.result)
            }
            if animated && Int.random(in: 0..<3, using: &random) > 0 { directView.finishBatchAnimations() }
            if animated && step % 5 == 0 { directView.setContentOffset(Int.random(in: 0...max(0, directView.maximumContentOffset), using: &random)) }
            let expected = try await queue.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM item ORDER BY grp, score, id") }
            #expect(Self.shownIDs(diffing) == expected, "diff path, seed \(seed), step \(step)")
            if !animated || direct.phase == .idle {
                #expect(Self.shownIDs(direct) == expected, "direct path, seed \(seed), step \(step)")
            }
            #expect(directView.violations.isEmpty && diffView.violations.isEmpty, "\(directView.violations) \(diffView.violations), step \(step)")
        }
        if animated {
            for _ in 0..<100 where directView.isAnimatingBatch { directView.finishBatchAnimations() }
        }
        #expect(direct.phase == .idle)
        #expect(Self.shownIDs(direct) == Self.shownIDs(diffing))
        #expect(directView.staleCells().isEmpty && diffView.staleCells().isEmpty)
        #expect(direct.statistics.fullDiffs == 0, "the direct path diffed \(direct.statistics.fullDiffs) times")
        #expect(direct.statistics.directChangesets > 0 && incremental > 0)
        if animated { #expect(direct.statistics.coalescedUpdates > 0) }
        withExtendedLifetime((directSource, diffSource)) {}
    }

    @Test("a one-row write to a 100k-row query: the presenter reads a bounded number of rows, as at 10k")
    func presenterReadsAreBounded() async throws {
        func reads(rows: Int) async throws -> Int {
            let queue = try DatabaseQueue(path: try TestDatabase.path())
            try await queue.write { db in
                try db.execute(sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0)")
                let statement = try db.makeStatement(sql: "INSERT INTO item(name) VALUES (?)")
                for index in 0..<rows { try statement.execute(arguments: [String(format: "n%07d", (index * 7_919) % rows)]) }
            }
            let (query, log) = try await LiveQueryExactnessTests.open(LiveQueryRequest(table: "item", sort: [SortTerm("name")], version: "version"), queue)
            let counter = ReadCounter()
            let presenter = Presenter()
            let (view, dataSource) = presenter.attachHeadlessView(realization: .visible(margin: 5), viewportRows: 30)
            presenter.replace(with: CountingList(base: query.initialResult, counter: counter))
            view.layoutIfNeeded()
            view.setContentOffset(rows / 2)
            var most = 0
            for step in 0..<10 {
                try await queue.write { db in
                    try db.execute(sql: "UPDATE item SET name = ?, version = version + 1 WHERE id = ?", arguments: ["n\(step)", rows / 2 + step])
                }
                for update in log.updates {
                    guard let before = update.changeset.before, let after = update.changeset.after else { continue }
                    counter.reads = 0
                    presenter.apply(Changeset(changes: update.changeset.changes, from: CountingList(base: before, counter: counter),
                                              to: CountingList(base: after, counter: counter)))
                    most = max(most, counter.reads)
                }
            }
            #expect(view.violations.isEmpty && view.staleCells().isEmpty)
            #expect(Self.shownIDs(presenter) == (try await queue.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM item ORDER BY name, id") }))
            withExtendedLifetime((dataSource, query)) {}
            return most
        }
        let small = try await reads(rows: 10_000)
        let large = try await reads(rows: 100_000)
        print("LiveQueryPresenterTests: rows read by the presenter per one-row update: \(small) at 10k, \(large) at 100k")
        #expect(large <= small + 4, "reads grew with the list: \(small) → \(large)")
    }
}
