import Foundation
import GRDB
import ListDiff
import ListPresenter
import ListTesting
import LiveListClient
import LiveListWire
import Testing

/// A served list through the same `ListController` a local live query uses: rows decoded into the
/// app's type, `upToDate()` answered by the server's `synced` after another process's commit.
@MainActor
@Suite("A remote list in a ListController")
struct RemoteListControllerTests {
    struct Message: Decodable, Equatable {
        var id: Int64
        var day: Int64
        var sender: String
        var subject: String
    }

    /// `day` is an integer column: every row fails to decode, naming it.
    struct MisdeclaredMessage: Decodable {
        var id: Int64
        var day: String
    }

    @Test("upToDate called right after start waits for the first connection and its list, instead of finding the query idle")
    func upToDateRightAfterStart() async throws {
        let fixture = try await WireFixture.start(rows: 12, seed: 0xC0_47_21)
        let query = RemoteLiveQuery(url: fixture.url, query: "inbox", window: 0..<40, prefetch: 10)
        let controller = ListController(source: RemoteListSource(query, as: Message.self))
        try await within("the first state, asked for at start") {
            // No suspension between the two: the query's task has not run yet.
            query.start()
            #expect(query.connectionState == .connecting)
            try await controller.upToDate()
        }
        #expect(controller.source.query.model.state.count == (try fixture.select().rows.count))
        query.stop()
        await fixture.stop()
    }

    @Test("upToDate returns once the list holds another connection's commits; rows decode into the app's type")
    func upToDateAndDecodedRecords() async throws {
        let fixture = try await WireFixture.start(rows: 120, seed: 0xC0_47_20)
        let query = RemoteLiveQuery(url: fixture.url, query: "inbox", window: 0..<40, prefetch: 10)
        let controller = ListController(source: RemoteListSource(query, as: Message.self))
        let (view, _) = controller.cells.attachHeadlessView(viewportRows: 20)
        view.layoutIfNeeded()
        query.start()
        try await within("the first state") { try await controller.upToDate() }
        // Another connection to the file: the server hears of its commits only by looking.
        let other = try DatabaseQueue(path: fixture.path)
        var random = SeededRandomNumberGenerator(seed: SeededRandomNumberGenerator.testSeed("remote upToDate"))
        for round in 0..<8 {
            let start = random
            random = try await other.write { db in
                var random = start
                for _ in 0..<3 { try WireFixture.randomWrite(db, &random) }
                return random
            }
            try await within("round \(round)") { try await controller.upToDate() }
            let oracle = try fixture.select()
            let state = query.model.state
            #expect(state.counts == oracle.sections.map(\.count), "round \(round): the list holds the commits when upToDate returns")
            let held = query.model.window.clamped(to: 0..<state.count)
            #expect(held.map { state.row(at: $0).id } == held.map { RemoteRowID.row(oracle.rows[$0][0]) }, "round \(round)")
        }
        try await eventually("the view caught up, records shown") {
            controller.presenter.phase == .idle && view.visibleItems.allSatisfy { if case .record? = view.cellContent(at: $0) { true } else { false } }
        }
        let oracle = try fixture.select()
        for path in view.visibleItems {
            let modelPath = try #require(controller.presenter.displayed.modelPath(ofDisplayed: path))
            let position = try #require(query.model.state.position(of: modelPath))
            let row = oracle.rows[position]
            let record = try #require(controller.record(at: path))
            #expect(record.id == row[0].integer && record.day == row[1].integer && .text(record.sender) == row[2] && .text(record.subject) == row[3])
        }
        query.stop()
        await fixture.stop()
    }

    @Test("an updated visible row shows its new record in the batch that reloads it: its values come with the changes, no placeholder, one cell read")
    func updatedRowsDoNotBlink() async throws {
        let fixture = try await WireFixture.start(rows: 40, seed: 0xB11C)
        let query = RemoteLiveQuery(url: fixture.url, query: "inbox", window: 0..<40)
        let controller = ListController(source: RemoteListSource(query, as: Message.self), prefetch: 0)
        let (view, dataSource) = controller.cells.attachHeadlessView(viewportRows: 40)
        view.layoutIfNeeded()
        query.start()
        try await within("the first state") { try await controller.upToDate() }
        try await eventually("every record shown") {
            controller.presenter.phase == .idle && !view.visibleItems.isEmpty
                && view.visibleItems.allSatisfy { if case .record? = view.cellContent(at: $0) { true } else { false } }
        }
        var random = SeededRandomNumberGenerator(seed: SeededRandomNumberGenerator.testSeed("remote blink"))
        for step in 0..<10 {
            let (reads, placeholders) = (view.cellReads, dataSource.placeholdersAnswered)
            let rows = try fixture.select().rows
            let position = random.next(upTo: rows.count)
            let id = try #require(rows[position][0].integer)
            // Not a sort column: the row stays where it is, reloaded.
            try await within("step \(step): the write") {
                try await fixture.pool.write { db in try db.execute(sql: "UPDATE message SET subject = subject || 'v' WHERE id = ?", arguments: [id]) }
            }
            try await within("step \(step): the update") { try await controller.upToDate() }
            let modelPath = try #require(query.model.state.path(ofPosition: position))
            guard case let .record(_, record)? = view.cellContent(at: modelPath) else {
                Issue.record("step \(step): the updated row shows \(String(describing: view.cellContent(at: modelPath))), not its record")
                continue
            }
            #expect(record.id == id && record.subject.hasSuffix("v"), "step \(step)")
            try await Task.sleep(for: .milliseconds(20))
            #expect(dataSource.placeholdersAnswered - placeholders == 0, "step \(step): placeholder cells shown")
            #expect(view.cellReads - reads == 1, "step \(step): cell reads for one updated row")
        }
        #expect(view.violations.isEmpty, "\(view.violations)")
        query.stop()
        await fixture.stop()
    }

    @Test("a row that does not fit the app's type shows as a failed placeholder naming the column; nothing else fails")
    func undecodableRowsFailAlone() async throws {
        let fixture = try await WireFixture.start(rows: 30, seed: 0xBAD)
        let query = RemoteLiveQuery(url: fixture.url, query: "inbox", window: 0..<30)
        let controller = ListController(source: RemoteListSource(query, as: MisdeclaredMessage.self))
        let (view, _) = controller.cells.attachHeadlessView(viewportRows: 10)
        view.layoutIfNeeded()
        query.start()
        try await within("the first state") { try await controller.upToDate() }
        try await eventually("failed placeholders") {
            guard let path = view.visibleItems.first, case let .placeholder(_, .failed(failure))? = view.cellContent(at: path) else { return false }
            return failure.message.contains("\"day\"") && failure.message.contains("String expected")
        }
        guard case .loaded = controller.presenter.listState else {
            Issue.record("the list itself stands: \(controller.presenter.listState)")
            return
        }
        query.stop()
        await fixture.stop()
    }
}

extension WireValue {
    var integer: Int64? {
        guard case let .integer(value) = self else { return nil }
        return value
    }
}
