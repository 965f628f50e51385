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

    /// A query showing `count` messages restored from a snapshot (no server), in a controller with
    /// a headless view of `count` rows that shows every record.
    static func restored(_ count: Int) async throws -> (RemoteLiveQuery, ListController<RemoteListSource<Message>>, ListController<RemoteListSource<Message>>.HeadlessView) {
        let query = RemoteLiveQuery(url: "ws://127.0.0.1:9/live", query: "inbox", window: 0..<count)
        let rows = (0..<count).map { position in
            let id = Int64(position + 1)
            return WireRow(position: position, id: .integer(id), values: [.integer(id), .integer(1), .text("s"), .text("subject \(id)")])
        }
        let list = WireReset(sub: 1, version: WireVersion(epoch: "t", sequence: 1), reason: .subscribed, columns: ["id", "day", "sender", "subject"],
                             sections: [WireSection(key: .null, count: count)], window: WireWindow(0..<count), rows: rows)
        try query.restore(RemoteListSnapshot(query: "inbox", arguments: [:], list: list, savedAt: Date()))
        let controller = ListController(source: RemoteListSource(query, as: Message.self))
        let (view, dataSource) = controller.cells.attachHeadlessView(viewportRows: count + 4)
        view.layoutIfNeeded()
        try await eventually("every record shown") { withExtendedLifetime(dataSource) { Self.shown(view).count == count } }
        return (query, controller, view)
    }

    /// The subjects the view's cells show, pending ones marked: a helper given the controller's
    /// view by its name.
    static func shown(_ view: ListController<RemoteListSource<Message>>.HeadlessView) -> [String] {
        view.visibleItems.compactMap { path in
            guard let content = view.cellContent(at: path), case let .record(_, message) = content else { return nil }
            return message.subject + (content.isPending ? " (pending)" : "")
        }
    }

    @Test("a cell is given whether its row is pending, at the row's version: shown, the cell is reloaded pending; withdrawn, reloaded as the server's; a row taken earlier says what its own version showed")
    func cellsCarryPending() async throws {
        let (query, controller, view) = try await Self.restored(6)
        let path = ItemPath(section: 0, item: 2)
        let before = try #require(controller.item(at: path))
        #expect(!before.isPending && before.id.value?.integer == 3)
        let reads = view.cellReads
        let changes = query.showPending([.update(id: .integer(3), values: ["subject": .text("archived")]),
                                         .insert(id: .integer(100), values: ["id": .integer(100), "day": .integer(1), "sender": .text("me"),
                                                                            "subject": .text("new")], placement: .first(inSection: .null))])
        try await eventually("the pending rows shown") {
            Self.shown(view) == ["new (pending)", "subject 1", "subject 2", "archived (pending)", "subject 4", "subject 5", "subject 6"]
        }
        // Given to the cell with the row: no second lookup, and the view's cells are all current.
        guard case let .record(row, message)? = view.cellContent(at: ItemPath(section: 0, item: 3)) else {
            Issue.record("the pending row shows no record")
            return
        }
        #expect(row.isPending && message.subject == "archived" && row.id == before.id)
        #expect(view.cellReads - reads == 2, "the inserted row and the reloaded one, each read once")
        #expect(view.staleCells().isEmpty && view.violations.isEmpty, "\(view.staleCells()) \(view.violations)")
        #expect(!before.isPending, "the row taken before the change says what its version showed")
        let pending = try #require(controller.item(at: ItemPath(section: 0, item: 3)))

        query.withdrawPending(changes)
        try await eventually("the server's rows back") { Self.shown(view) == (1...6).map { "subject \($0)" } }
        #expect(pending.isPending, "a pending row taken earlier stays what its version was")
        #expect(controller.item(at: path)?.isPending == false && controller.item(at: path)?.version != pending.version)
        #expect(view.staleCells().isEmpty && view.violations.isEmpty, "\(view.staleCells()) \(view.violations)")
    }

    @Test("a remote identity reads as its type, and a row is found by an identity written with the WireValue helpers")
    func typedIdentities() async throws {
        let (query, controller, _) = try await Self.restored(4)
        let ids = (0..<4).compactMap { controller.item(at: ItemPath(section: 0, item: $0))?.id.value?.integer }
        #expect(ids == [1, 2, 3, 4])
        #expect(query.displayedState.path(ofItem: .row(.integer(3))) == ItemPath(section: 0, item: 2))
        #expect(RemoteRowID.unloaded(position: 7).value == nil)
        let uuid = UUID()
        #expect(RemoteRowID.row(.uuid(uuid, as: .bytes)).value?.uuid == uuid)
        #expect(RemoteRowID.row(.uuid(uuid, as: .lowercaseText)).value?.uuid == uuid)
        #expect(RemoteRowID.row(.uuid(uuid, as: .bytes)) != .row(.uuid(uuid, as: .lowercaseText)), "two encodings are two identities")
    }

    @Test("a UUID and a Date as GRDB stores them are the values the WireValue helpers make, and read back")
    func grdbEncodings() throws {
        let database = try DatabaseQueue()
        // Whole milliseconds: GRDB writes dates to the millisecond.
        let dates = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_764_300_000.123), Date(timeIntervalSince1970: -86_400.5),
                     Date(timeIntervalSinceReferenceDate: 817_000_000.999), Date(timeIntervalSince1970: 253_402_300_799.999)]
        for date in dates {
            let uuid = UUID()
            let stored = try database.read { db in try Row.fetchOne(db, sql: "SELECT ?, ?", arguments: [uuid, date]) }
            let row = try #require(stored)
            let (bytes, written): (DatabaseValue, DatabaseValue) = (row[0], row[1])
            guard case let .blob(data) = bytes.storage, case let .string(text) = written.storage else {
                Issue.record("GRDB stored \(row)")
                continue
            }
            #expect(WireValue.uuid(uuid, as: .bytes) == .blob(Array(data)))
            #expect(WireValue.date(date, as: .sqliteText) == .text(text), "\(date)")
            #expect(WireValue.text(text).date.map { abs($0.timeIntervalSince(date)) < 0.001 } == true, "\(text) reads back")
        }
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

