import Foundation
import ListDiff
import ListPresenter
import ListTesting
import LiveQueryCore
import LiveQueryPostgres
import LiveQueryPostgresUI
import PostgresNIO
import ScratchPostgres
import Testing

extension PostgresDatabaseTests {
    /// A PostgreSQL live query through the same `ListController` a SQLite query and a served list use:
    /// `upToDate()` returns with the controller holding another session's commits, the visible records
    /// equal the SELECT, and a row whose record cannot be made fails alone.
    @Suite(.timeLimit(.minutes(3)))
    struct PostgresListControllerTests {
        struct Subject: Sendable, Equatable {
            var id: Int64
            var subject: String
        }

        nonisolated static func subject(_ row: PostgresRecordValues) throws -> Subject {
            guard case let .integer(id)? = row["id"] else { throw PostgresRecordError(column: "id") }
            guard case let .text(text)? = row["subject"], text.string != "spam" else { throw PostgresRecordError(column: "subject") }
            return Subject(id: id, subject: text.string)
        }

        @Test("upToDate returns with the controller holding another session's commits; visible records equal the SELECT; a bad row fails alone")
        func controllerOverPostgres() async throws {
            try await PostgresBehaviourTests.withDatabase(PostgresSQLTests.schema) { _, writer, database in
                let sql = "SELECT m.id, m.subject FROM message m ORDER BY m.subject, m.id"
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: sql, as: Int64.self), in: database)
                try await Self.exercise(query, sql: sql, writer)
                await query.cancel()
            }
        }

        @Test("an updated visible row shows its new record in the batch that reloads it: no placeholder, one cell read, no page read")
        func updatedRowsDoNotBlink() async throws {
            try await PostgresBehaviourTests.withDatabase(PostgresSQLTests.schema) { _, writer, database in
                let sql = "SELECT m.id, m.subject FROM message m ORDER BY m.subject, m.id"
                let query = try await PostgresLiveQuery.open(PostgresLiveQueryRequest(sql: sql, as: Int64.self), in: database)
                try await Self.updateVisibleRows(query, sql: sql, writer)
                await query.cancel()
            }
        }

        /// 30 rows, all on screen and loaded; 10 one-row updates of them, each counted until its
        /// loads (if any) have landed.
        @MainActor
        static func updateVisibleRows(_ query: PostgresLiveQuery<Int64>, sql: String, _ writer: PostgresConnection) async throws {
            let controller = ListController(source: PostgresLiveQuerySource(query: query, pageSize: 50, record: Self.subject), prefetch: 0)
            let (view, dataSource) = controller.cells.attachHeadlessView(viewportRows: 30)
            view.layoutIfNeeded()
            func shown() -> [String?] {
                view.visibleItems.map { path in
                    guard case let .record(_, record)? = view.cellContent(at: path) else { return nil }
                    return record.subject
                }
            }
            try await within("every record shown") {
                while shown().contains(nil) || shown().count < 30 { try await Task.sleep(for: .milliseconds(5)) }
            }
            var random = SeededRandomNumberGenerator(seed: SeededRandomNumberGenerator.testSeed("postgres blink"))
            for step in 0..<10 {
                let pageQueries = controller.source.cache.statistics.pageQueries
                let (reads, placeholders) = (view.cellReads, dataSource.placeholdersAnswered)
                let id = Int64.random(in: 1...30, using: &random)
                // A longer subject sorts after the others of its group: a move within the screen, and a reload.
                try await within("step \(step): the write") { try await PG.execute(writer, "UPDATE message SET subject = subject || 'v' WHERE id = \(id)") }
                try await within("step \(step): the update") { _ = try await controller.upToDate() }
                var expected: [[String?]] = []
                try await within("step \(step): the SELECT") { expected = try await PostgresSQLTests.expectedRows(writer, sql, columns: 2) }
                let path = try #require(controller.source.result.path(ofItem: id))
                guard case let .record(_, record)? = view.cellContent(at: path) else {
                    Issue.record("step \(step): the updated row shows \(String(describing: view.cellContent(at: path))), not its record")
                    continue
                }
                #expect(record.subject == expected[path.item][1], "step \(step)")
                try await within("step \(step): loads") { await controller.source.cache.waitForLoads() }
                try await Task.sleep(for: .milliseconds(20))
                #expect(dataSource.placeholdersAnswered - placeholders == 0, "step \(step): placeholder cells shown")
                #expect(view.cellReads - reads == 1, "step \(step): cell reads for one updated row")
                #expect(controller.source.cache.statistics.pageQueries == pageQueries, "step \(step): no page read")
                #expect(shown() == expected.map { $0[1] }, "step \(step)")
            }
            #expect(view.violations.isEmpty, "\(view.violations)")
            controller.stop()
        }

        @MainActor
        static func exercise(_ query: PostgresLiveQuery<Int64>, sql: String, _ writer: PostgresConnection) async throws {
            let controller = ListController(source: PostgresLiveQuerySource(query: query, pageSize: 10, record: Self.subject))
            let (view, _) = controller.cells.attachHeadlessView(viewportRows: 12)
            view.layoutIfNeeded()
            var random = SeededRandomNumberGenerator(seed: SeededRandomNumberGenerator.testSeed("postgres controller"))
            for round in 0..<8 {
                try await PostgresSQLTests.randomTransaction(writer, &random)
                try await within("round \(round)") { _ = try await controller.upToDate() }
                let expected = try await PostgresSQLTests.expectedRows(writer, sql, columns: 2)
                let model = controller.presenter.model
                #expect(model.itemCount == expected.count, "round \(round): the controller holds the commits when upToDate returns")
                let ids = (0..<model.itemCount(inSection: 0)).map { String(model.item(at: ItemPath(section: 0, item: $0)).id) }
                #expect(ids == expected.map { $0[0] ?? "" }, "round \(round)")
            }
            try await PG.execute(writer, "UPDATE message SET subject = 'spam' WHERE id = (SELECT min(id) FROM message)")
            try await within("the spam row") { _ = try await controller.upToDate() }
            let expected = try await PostgresSQLTests.expectedRows(writer, sql, columns: 2)
            try await within("the view caught up, records or failures shown") {
                while !(controller.presenter.phase == .idle && view.visibleItems.allSatisfy({ path in
                    switch view.cellContent(at: path) {
                    case .record?, .placeholder(_, .failed)?: true
                    default: false
                    }
                })) {
                    controller.cells.visibleRangeDidChange(view.visibleItems)
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            // The random writes use "spam" as a subject too: every spam row fails, and only those.
            var failed = 0
            for path in view.visibleItems {
                let modelPath = try #require(controller.presenter.displayed.modelPath(ofDisplayed: path))
                // One section: the item is the flat position.
                let position = modelPath.item
                let row = expected[position]
                if let record = controller.record(at: path) {
                    #expect(String(record.id) == row[0] && record.subject == row[1])
                } else {
                    #expect(row[1] == "spam", "only spam rows fail: \(row)")
                    failed += 1
                }
            }
            #expect(failed == view.visibleItems.count { path in
                controller.presenter.displayed.modelPath(ofDisplayed: path).map { expected[$0.item][1] == "spam" } ?? false
            })
            // A spam row, wherever it is in the list: its record fails alone, naming the column, and
            // the other rows of its page of 10 load beside it.
            let spam = try #require(expected.firstIndex { $0[1] == "spam" })
            let cache = controller.source.cache
            let page = (spam / 10 * 10)..<min(expected.count, spam / 10 * 10 + 10)
            // (A page load under way when a row changed leaves that row for the page's next request:
            // ask until every row of the page has settled.)
            try await within("the spam row's page settled") {
                while true {
                    _ = cache.rows(in: page)
                    await cache.waitForLoads()
                    let settled = page.allSatisfy { position in
                        if expected[position][1] == "spam" { return cache.rowFailure(atPosition: position) != nil }
                        if case .loaded? = cache.rows(in: position..<position + 1).first { return true }
                        return false
                    }
                    if settled { return }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            let failure = try #require(cache.rowFailure(atPosition: spam), "the spam row at \(spam) failed")
            #expect(failure.message.contains("\"subject\""), "\(failure.message)")
            controller.stop()
        }
    }
}
