import Foundation
import GRDB
import ListDiff
import ListPresenter
import ListTesting
import LiveQuery
import Testing
@testable import LiveQueryUI

/// A live query in a strict headless view through one `LiveQueryController`: records by page,
/// placeholders, state rows and failures, real SQLite writes.
@MainActor
struct LiveQueryControllerTests {
    typealias Controller = LiveQueryController<Int64, ItemRecord>

    /// A controller over a fresh table of `rows` items, its strict headless view laid out.
    @MainActor
    struct Fixture {
        let pool: DatabasePool
        let controller: Controller
        let view: LiveView
        let dataSource: CellSourceDataSource<LiveSection, LiveRow<Int64>, ItemRecord>

        /// Once the pages in flight have landed: every batch passed the strict rules, and every held
        /// cell shows what the cells answer now.
        func settledViewIsClean() async throws -> Bool {
            try await eventually("visible records") { !view.shown.contains(.placeholder(failed: false)) }
            return view.violations.isEmpty && view.staleCells(recordsEqual: ==).isEmpty
        }
    }

    static func start(rows: Int, pageSize: Int = 50, prefetch: Int = 20, viewportRows: Int = 20) async throws -> Fixture {
        let pool = try TestDatabase.pool(rows: rows)
        let query = try await LiveQuery<Int64>.open(TestDatabase.byName, in: pool, options: .init(dataVersionPollInterval: nil, firstScreenRows: nil))
        let controller = Controller(query: query, reader: pool, pageSize: pageSize, prefetch: prefetch)
        let (view, dataSource) = controller.cells.attachHeadlessView(viewportRows: viewportRows)
        view.layoutIfNeeded()
        return Fixture(pool: pool, controller: controller, view: view, dataSource: dataSource)
    }

    @Test("cells show placeholders, then their records once the page lands; only the rows that landed are re-read")
    func placeholdersThenRecords() async throws {
        let fixture = try await Self.start(rows: 100, pageSize: 10, prefetch: 0, viewportRows: 10)
        let (controller, view) = (fixture.controller, fixture.view)
        // The page loads concurrently with the reads of the first screen: the cells read before
        // it landed are placeholders, and only they are read again.
        let placeholders = view.shown.filter { $0 == .placeholder(failed: false) }.count
        #expect(placeholders > 0 && view.cellReads == 10)
        try await eventually("page 0 shown") { view.shown == (0..<10).map { .record(String(format: "name%04d", $0)) } }
        #expect(view.cellReads == 10 + placeholders, "only the cells that showed placeholders are re-read")
        #expect(controller.cache.statistics.pageQueries == 1)

        // Five rows down: rows 5…9 are held, rows 10…14 are not.
        let reloads = view.reloadDataCount
        let readsBeforeScroll = view.cellReads
        view.setContentOffset(5)
        #expect(view.shown.prefix(5) == ArraySlice((5..<10).map { .record(String(format: "name%04d", $0)) }))
        let newPlaceholders = view.shown.filter { $0 == .placeholder(failed: false) }.count
        #expect(newPlaceholders > 0 && view.cellReads - readsBeforeScroll == 5)
        try await eventually("page 1 shown") { view.shown == (5..<15).map { .record(String(format: "name%04d", $0)) } }
        #expect(view.cellReads - readsBeforeScroll == 5 + newPlaceholders, "only the rows of page 1 that showed placeholders are re-read")
        #expect(view.reloadDataCount == reloads && controller.cache.statistics.pageQueries == 2)
        #expect(try await fixture.settledViewIsClean(), "\(fixture.view.violations)")
    }

    @Test("what becomes visible is what loads: scrolled-to and announced ranges load their pages, the rest of the list never does")
    func visibleRangeDrivesPageLoads() async throws {
        let fixture = try await Self.start(rows: 1_000, pageSize: 50, prefetch: 0, viewportRows: 20)
        let (controller, view) = (fixture.controller, fixture.view)
        try await eventually("first page") { controller.cache.statistics.rowsLoaded == 50 }
        view.setContentOffset(510)
        try await eventually("page 10 shown") { view.shown.first == .record("name0510") }
        #expect(controller.cache.statistics.rowsLoaded == 100)
        controller.cells.visibleRangeDidChange([ItemPath(section: 0, item: 900), ItemPath(section: 0, item: 930)])
        try await eventually("page 18") { controller.cache.statistics.rowsLoaded == 150 }
        #expect(controller.cache.statistics.pageQueries == 3)
        // Prefetch reaches into the neighbouring pages: pages 13 and 14 around row 700, then — once
        // they land and the rows on screen (510…529) are asked for again — pages 9 and 11.
        controller.cells.prefetch = 30
        controller.cells.visibleRangeDidChange([ItemPath(section: 0, item: 700)])
        try await eventually("pages 9, 11, 13 and 14") { controller.cache.statistics.rowsLoaded == 350 }
        #expect(controller.cache.statistics.pageQueries == 7)
        withExtendedLifetime(fixture) {}
    }

    @Test("an empty query shows the empty row; rows written to it replace it")
    func emptyRowThenRows() async throws {
        let fixture = try await Self.start(rows: 0)
        let (pool, controller, view) = (fixture.pool, fixture.controller, fixture.view)
        #expect(view.shown == [.state(.empty)])
        guard case .listStatus = controller.cells.header(forSection: 0) else {
            Issue.record("section 0 should be the list's status section")
            return
        }
        try await pool.write { db in try db.execute(sql: "INSERT INTO item(name) VALUES ('first')") }
        try await eventually("the row") { view.shown == [.record("first")] }
        #expect(controller.cells.header(forSection: 0).section != nil)
        #expect(try await fixture.settledViewIsClean(), "\(fixture.view.violations)")
    }

    @Test("a failure shows an error row above the rows; its retry looks again and clears it")
    func failureRetryClears() async throws {
        let fixture = try await Self.start(rows: 30, viewportRows: 5)
        let controller = fixture.controller
        controller.source.receive(.failure(.databaseBusy(DatabaseFailure(DatabaseError(resultCode: .SQLITE_BUSY, message: "locked by a test"), message: "locked by a test"))))
        guard case let .state(block) = controller.cells.content(at: ItemPath(section: 0, item: 0)) else {
            Issue.record("expected the list's error row on top")
            return
        }
        #expect(block.kind == .failed && block.message?.contains("locked by a test") == true)
        #expect(controller.cells.numberOfItems(inSection: 1) == 30, "the rows stay")
        #expect(controller.cells.activateRow(at: ItemPath(section: 0, item: 0)))
        try await eventually("the error row gone") { controller.cells.numberOfSections == 1 }
        #expect(controller.failure == nil)
        #expect(try await fixture.settledViewIsClean(), "\(fixture.view.violations)")
    }

    @Test("a failure, then a successful update: the error row goes and the change shows")
    func failureThenUpdateClears() async throws {
        let fixture = try await Self.start(rows: 3)
        let (pool, controller, view) = (fixture.pool, fixture.controller, fixture.view)
        try await eventually("rows") { view.shown.count == 3 && !view.shown.contains(.placeholder(failed: false)) }
        controller.source.receive(.failure(.changeLogUnavailable("dropped by a test")))
        #expect(view.shown.first == .state(.failed))
        try await pool.write { db in try db.execute(sql: "INSERT INTO item(name) VALUES ('aaa')") }
        try await eventually("the update, without the error row") { view.shown.first == .record("aaa") }
        #expect(view.shown.count == 4 && controller.failure == nil)
        #expect(try await fixture.settledViewIsClean(), "\(fixture.view.violations)")
    }

    @Test("follows real writes to a database pool: every batch passes the strict rules, cells end showing what a fresh SELECT returns")
    func followsWrites() async throws {
        let fixture = try await Self.start(rows: 200, pageSize: 20, prefetch: 10, viewportRows: 12)
        let (pool, controller, view) = (fixture.pool, fixture.controller, fixture.view)
        var random = SeededRandomNumberGenerator(seed: 0x5EED_CE11)
        for step in 0..<40 {
            let id = Int64.random(in: 1...220, using: &random)
            let name = String(format: "name%04d", Int.random(in: 0..<260, using: &random))
            let sql = switch Int.random(in: 0..<4, using: &random) {
            case 0: "INSERT INTO item(name) VALUES ('\(name)')"
            case 1: "DELETE FROM item WHERE id = \(id)"
            case 2: "UPDATE item SET name = '\(name)x' WHERE id = \(id)"
            default: "UPDATE item SET version = version + 1, name = name || 'v' WHERE id = \(id)"
            }
            try await pool.write { db in try db.execute(sql: sql) }
            let expected = try TestDatabase.rows(pool)
            if step % 4 == 0 { view.setContentOffset(Int.random(in: 0...max(0, expected.count - 12), using: &random)) }
            try await eventually("step \(step): the list follows \(sql), its visible cells show their records") {
                let first = view.contentOffset
                return controller.presenter.phase == .idle
                    && controller.presenter.displayed.model.snapshot.sections.flatMap { $0.items.map(\.id) } == expected.map(\.id)
                    && view.shown == expected[first..<min(expected.count, first + 12)].map { .record($0.name) }
            }
            #expect(view.violations.isEmpty, "step \(step): \(view.violations)")
        }
        #expect(try await fixture.settledViewIsClean(), "\(view.violations)")
        #expect(controller.presenter.statistics.fullDiffs == 0, "changesets are applied as they are")
        controller.stop()
        try await pool.write { db in try db.execute(sql: "INSERT INTO item(name) VALUES ('after stop')") }
        try await Task.sleep(for: .milliseconds(50))
        let count = try TestDatabase.rows(pool).count
        #expect(!controller.isFollowing && controller.presenter.model.itemCount == count - 1)
        withExtendedLifetime(fixture) {}
    }

    @Test("upToDate returns once the list holds another connection's commit: no polling, the row and its record at once")
    func upToDateAfterAnotherConnectionsWrite() async throws {
        let fixture = try await Self.start(rows: 20, pageSize: 50, viewportRows: 30)
        let (pool, controller, view) = (fixture.pool, fixture.controller, fixture.view)
        try await within("first state") { try await controller.upToDate() }
        // Another connection to the same file: the query hears of it only by looking.
        let other = try DatabaseQueue(path: pool.path)
        for round in 0..<5 {
            try await other.write { db in try db.execute(sql: "INSERT INTO item(name) VALUES ('aaa\(round)')") }
            try await within("round \(round)") { try await controller.upToDate() }
            let expected = try TestDatabase.rows(pool)
            #expect(controller.presenter.model.itemCount == expected.count, "round \(round): the model holds the write when upToDate returns")
            #expect(controller.holds(try #require(controller.result.stateID)))
        }
        try await eventually("records shown") { view.shown.first == .record("aaa0") }
        #expect(controller.record(at: ItemPath(section: 0, item: 0))?.name == "aaa0")
        #expect(controller.item(at: ItemPath(section: 0, item: 0))?.id == controller.result.item(at: ItemPath(section: 0, item: 0)).id)
        #expect(controller.record(at: ItemPath(section: 3, item: 0)) == nil, "outside the list")
        controller.stop()
        try await other.write { db in try db.execute(sql: "INSERT INTO item(name) VALUES ('after stop')") }
        await #expect(throws: CancellationError.self) { try await within("after stop") { try await controller.upToDate() } }
        withExtendedLifetime(fixture) {}
    }

    @Test("an updated visible row shows its new record in the batch that reloads it: no placeholder, one cell read, no page query")
    func updatedRowsDoNotBlink() async throws {
        // 30 rows, all on screen and loaded.
        let fixture = try await Self.start(rows: 30, pageSize: 50, prefetch: 0, viewportRows: 30)
        let (pool, controller, view, dataSource) = (fixture.pool, fixture.controller, fixture.view, fixture.dataSource)
        try await eventually("every record shown") { view.shown == (0..<30).map { .record(String(format: "name%04d", $0)) } }
        try await within("first page loaded") { await controller.cache.waitForLoads() }
        var random = SeededRandomNumberGenerator(seed: 0xB11C)
        for step in 0..<10 {
            let pageQueries = controller.cache.statistics.pageQueries
            let (reads, placeholders) = (view.cellReads, dataSource.placeholdersAnswered)
            let expected = try TestDatabase.rows(pool)
            let target = expected[Int.random(in: 0..<expected.count, using: &random)]
            // Even steps keep the row in place, odd ones move it: a reload, or a move and a reload.
            let name = step.isMultiple(of: 2) ? target.name + "v" : String(format: "name%04d", Int.random(in: 0..<30, using: &random)) + "m\(step)"
            try await within("step \(step): the write") {
                try await pool.write { db in
                    try db.execute(sql: "UPDATE item SET name = ?, version = version + 1 WHERE id = ?", arguments: [name, target.id])
                }
            }
            try await within("step \(step): the update") { try await controller.upToDate() }
            // Right after the batch: the row's cell shows its new record.
            let path = try #require(controller.result.path(ofItem: target.id))
            guard case let .record(_, record)? = view.cellContent(at: path) else {
                Issue.record("step \(step): the updated row shows \(String(describing: view.cellContent(at: path))), not its record")
                continue
            }
            #expect(record.name == name, "step \(step)")
            // Nothing more comes for it: no page was asked for, nothing lands later.
            try await within("step \(step): loads") { await controller.cache.waitForLoads() }
            try await Task.sleep(for: .milliseconds(20))
            #expect(dataSource.placeholdersAnswered - placeholders == 0, "step \(step): placeholder cells shown")
            #expect(view.cellReads - reads == 1, "step \(step): cell reads for one updated row")
            #expect(controller.cache.statistics.pageQueries == pageQueries, "step \(step): no page query")
            #expect(view.shown == (try TestDatabase.rows(pool)).map { .record($0.name) }, "step \(step)")
        }
        #expect(controller.cache.statistics.rowsFromCommits == 10)
        #expect(view.violations.isEmpty && view.staleCells(recordsEqual: ==).isEmpty, "\(view.violations)")
        withExtendedLifetime(fixture) {}
    }

    @Test("willChange and didChange hear every event around its application, as a fetched results controller's delegate does")
    func changeHooks() async throws {
        let fixture = try await Self.start(rows: 3)
        let (pool, controller) = (fixture.pool, fixture.controller)
        try await within("first state") { try await controller.upToDate() }
        var heard: [String] = []
        controller.willChange = { event in
            if case .changes = event { heard.append("will \(controller.presenter.model.itemCount)") }
        }
        controller.didChange = { event in
            if case .changes = event { heard.append("did \(controller.presenter.model.itemCount)") }
        }
        try await pool.write { db in try db.execute(sql: "INSERT INTO item(name) VALUES ('zzz')") }
        try await within("the insert") { try await controller.upToDate() }
        #expect(heard == ["will 3", "did 4"])
        withExtendedLifetime(fixture) {}
    }
}
