import Foundation
import ListDiff
@testable import ListPresenter
import ListTesting
import Testing

typealias Item = VersionedItem<Int, Int>
typealias Group = VersionedItem<Int, Int>

/// An in-memory record provider whose loads the test lands or fails by hand.
@MainActor
final class ManualRecords: ListRecordProvider {
    /// The list, by flat position.
    var ids: [Int] = []
    var held: [Int: String] = [:]
    /// Every range asked for, with its prefetch.
    var requested: [Range<Int>] = []
    var failures: [Int: LoadFailure] = [:]
    var onRowsLoaded: (@Sendable ([Int]) -> Void)?
    var onStateChanged: (@Sendable () -> Void)?

    func record(for item: Item) -> String? { held[item.id] }

    func loadRecords(at positions: Range<Int>, prefetch: Int) {
        requested.append(max(0, positions.lowerBound - prefetch)..<min(ids.count, positions.upperBound + prefetch))
    }

    func placeholderState(atPosition position: Int) -> PlaceholderState {
        failures[position].map { .failed($0) } ?? .loading
    }

    func land(_ landed: [Int]) {
        for id in landed { held[id] = "record \(id)" }
        onRowsLoaded?(landed)
    }

    func fail(positions: Range<Int>, retry: @escaping @Sendable () -> Void) {
        for position in positions { failures[position] = LoadFailure(Failure(), retry: retry) }
        onStateChanged?()
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String { "page failed" }
    }
}

/// Counts calls from `@Sendable` closures.
final class CallCounter: @unchecked Sendable {
    // `count` is only touched under `lock`; that is what makes sharing it sound.
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}

/// `ListCellSource` over a hand-driven record provider and a strict headless view.
@MainActor
struct ListCellSourceTests {
    typealias Cells = ListCellSource<Group, Item, String>
    typealias View = Cells.HeadlessView

    static func snapshot(_ sections: [[Int]]) -> ListSnapshot<Group, Item> {
        ListSnapshot(sections: sections.enumerated().map { index, ids in
            SnapshotSection(Group(id: index, version: 0), items: ids.map { Item(id: $0, version: 0) })
        })
    }

    /// A cell source over `sections` of rows (records held for `held`), shown in a strict view
    /// of `viewportRows` that has read its first screen.
    struct Fixture {
        let records: ManualRecords
        let cells: Cells
        let view: View
        let dataSource: CellSourceDataSource<Group, Item, String>
    }

    static func start(_ sections: [[Int]], isComplete: Bool = true, held: [Int] = [], prefetch: Int = 0,
                      viewportRows: Int = 5, headerRows: Int = 0, realization: View.Realization = .visible(margin: 0)) -> Fixture {
        let records = ManualRecords()
        records.ids = sections.flatMap { $0 }
        for id in held { records.held[id] = "record \(id)" }
        let cells = Cells(presenter: ListPresenter(), records: records, prefetch: prefetch)
        let (view, dataSource) = cells.attachHeadlessView(realization: realization, viewportRows: viewportRows, sectionHeaderRows: headerRows)
        cells.receive(.initial(AnySectionedList(snapshot(sections)), isComplete: isComplete))
        view.layoutIfNeeded()
        return Fixture(records: records, cells: cells, view: view, dataSource: dataSource)
    }

    static func shown(_ view: View) -> [String] {
        view.visibleItems.compactMap { path in
            switch view.cellContent(at: path) {
            case let .record(_, record)?: record
            case let .placeholder(item, state)?: "\(item.id) \(state.isFailed ? "failed" : "loading")"
            case let .state(block)?: "state \(block.kind)"
            case nil: nil
            }
        }
    }

    @Test("staleCells() of a cell source's view needs no record equality: a record that landed while its cell still shows the placeholder is stale, until the cell is reconfigured")
    func staleCellsWithoutRecordEquality() async throws {
        let fixture = Self.start([[1, 2, 3, 4]], held: [1, 2])
        let (records, view) = (fixture.records, fixture.view)
        #expect(view.staleCells().isEmpty && Self.shown(view) == ["record 1", "record 2", "3 loading", "4 loading"])
        // Held without a word to the cell source: the view still shows the placeholders.
        records.held[3] = "record 3"
        #expect(view.staleCells() == [ItemPath(section: 0, item: 2)])
        records.land([3, 4])
        try await eventually("the landed records shown") { view.staleCells().isEmpty }
        #expect(Self.shown(view) == ["record 1", "record 2", "record 3", "record 4"] && view.violations.isEmpty)
        withExtendedLifetime(fixture.dataSource) {}
    }

    @Test("list states: loading while a first screen is empty and incomplete, empty once complete, failed with a retry that runs, cleared by a recovery")
    func listStates() async throws {
        let fixture = Self.start([[]], isComplete: false)
        let (cells, view) = (fixture.cells, fixture.view)
        let empty = Self.snapshot([[]])
        #expect(Self.shown(view) == ["state loading"])
        cells.receive(.changes(Changeset(from: empty, to: empty), isComplete: true))
        #expect(Self.shown(view) == ["state empty"])
        let retries = CallCounter()
        cells.receive(.failure(LoadFailure(ManualRecords.Failure(), retry: { retries.increment() })))
        #expect(Self.shown(view) == ["state failed"])
        #expect(cells.activateRow(at: ItemPath(section: 0, item: 0)) && retries.value == 1)
        cells.receive(.recovered())
        #expect(Self.shown(view) == ["state empty"])
        #expect(view.violations.isEmpty && view.staleCells(recordsEqual: ==).isEmpty)
        withExtendedLifetime(fixture) {}
    }

    @Test("a failed page turns its visible placeholders into failures; tapping one retries, and the records show")
    func failedPageRetries() async throws {
        let fixture = Self.start([Array(0..<30)])
        let (records, cells, view) = (fixture.records, fixture.cells, fixture.view)
        #expect(Self.shown(view) == (0..<5).map { "\($0) loading" })
        #expect(records.requested.contains(0..<1) && records.requested.contains(4..<5))
        records.fail(positions: 0..<10, retry: { MainActor.assumeIsolated { records.land(Array(0..<10)) } })
        try await eventually("failures shown") { Self.shown(view) == (0..<5).map { "\($0) failed" } }
        #expect(cells.activateRow(at: ItemPath(section: 0, item: 2)))
        records.failures = [:]
        try await eventually("records shown") { Self.shown(view) == (0..<5).map { "record \($0)" } }
        #expect(view.cellReads == 15, "5 placeholders, 5 failures, 5 records")
        #expect(view.violations.isEmpty && view.staleCells(recordsEqual: ==).isEmpty)
        withExtendedLifetime(fixture) {}
    }

    @Test("records that land for rows already shown with their records re-read nothing; a landed placeholder is re-read once")
    func onlyPlaceholdersAreReread() async throws {
        let fixture = Self.start([Array(0..<30)], held: Array(0..<4))
        let (records, view) = (fixture.records, fixture.view)
        #expect(Self.shown(view) == ["record 0", "record 1", "record 2", "record 3", "4 loading"] && view.cellReads == 5)
        records.land(Array(0..<10))   // a page that also holds rows already shown, and rows off screen
        try await eventually("row 4's record") { Self.shown(view).last == "record 4" }
        #expect(view.cellReads == 6, "only row 4's cell is re-read")
        #expect(view.violations.isEmpty && view.staleCells(recordsEqual: ==).isEmpty)
        withExtendedLifetime(fixture) {}
    }

    @Test("records that land for rows whose cells the view prepared below its viewport reach those cells: scrolled into view, they show their records")
    func preparedCellsGetTheirRecords() async throws {
        let fixture = Self.start([Array(0..<30)], viewportRows: 5, realization: .visible(margin: 3))
        let (records, view) = (fixture.records, fixture.view)
        #expect(Self.shown(view) == (0..<5).map { "\($0) loading" })
        records.land(Array(0..<10))
        try await eventually("the visible records") { Self.shown(view) == (0..<5).map { "record \($0)" } }
        // Rows 5 to 7 had cells prepared with placeholders: they were refreshed too.
        #expect(view.staleCells(recordsEqual: ==).isEmpty, "\(view.staleCells(recordsEqual: ==))")
        view.setContentOffset(3)
        #expect(Self.shown(view) == (3..<8).map { "record \($0)" })
        #expect(view.violations.isEmpty && view.staleCells(recordsEqual: ==).isEmpty)
        withExtendedLifetime(fixture) {}
    }

    @Test("past the placeholder limit, the placeholders of prepared cells are kept with the visible ones: their records still reach them")
    func forgettingKeepsPreparedCells() async throws {
        let fixture = Self.start([Array(0..<3_000)], viewportRows: 5, realization: .visible(margin: 3))
        let (records, cells, view) = (fixture.records, fixture.cells, fixture.view)
        // Scrolling hands out a placeholder for every row that comes near the viewport.
        for offset in stride(from: 0, through: 1_200, by: 5) { view.setContentOffset(offset) }
        #expect(cells.placeholders.count > Cells.placeholderLimit)
        // A landing far away makes the cell source forget what it can.
        records.land([0])
        try await eventually("placeholders forgotten") { cells.placeholders.count <= Cells.placeholderLimit }
        records.land(Array(1_190..<1_215))
        try await eventually("the visible records") { Self.shown(view) == (1_200..<1_205).map { "record \($0)" } }
        #expect(view.staleCells(recordsEqual: ==).isEmpty, "\(view.staleCells(recordsEqual: ==))")
        #expect(view.violations.isEmpty)
        withExtendedLifetime(fixture) {}
    }

    @Test("a record read by someone else between its landing and the cell source hearing of it still reaches the cell that showed the placeholder")
    func readBeforeTheLandingIsHeard() async throws {
        let fixture = Self.start([Array(0..<30)], held: Array(0..<4))
        let (records, cells, view) = (fixture.records, fixture.cells, fixture.view)
        #expect(Self.shown(view).last == "4 loading")
        records.land([4])   // heard of on a later turn of the main actor
        guard case .record = cells.content(at: ItemPath(section: 0, item: 4)) else {
            Issue.record("the record is held once landed")
            return
        }
        try await eventually("row 4's record", seconds: 5) { Self.shown(view).last == "record 4" }
        #expect(view.violations.isEmpty && view.staleCells(recordsEqual: ==).isEmpty)
        withExtendedLifetime(fixture) {}
    }

    @Test("while a batch animates, rows are matched by identity and nothing loads by position; once it lands, what is visible loads")
    func loadsWaitForTheView() async throws {
        let before = Self.snapshot([Array(0..<30)])
        let after = Self.snapshot([[0, 1] + Array(100..<105) + Array(2..<30)])
        let fixture = Self.start([Array(0..<30)], held: Array(0..<30))
        let (records, cells, view) = (fixture.records, fixture.cells, fixture.view)
        view.completesBatchAnimationsImmediately = false
        #expect(Self.shown(view) == (0..<5).map { "record \($0)" })
        records.ids = [0, 1] + Array(100..<105) + Array(2..<30)
        records.requested = []
        cells.receive(.changes(Changeset(from: before, to: after)))
        #expect(cells.presenter.phase == .applyingBatch)
        let placeholders = ["record 0", "record 1", "100 loading", "101 loading", "102 loading"]
        #expect(Self.shown(view) == placeholders)
        #expect(records.requested.isEmpty, "no load by position while the view is between states")
        view.finishBatchAnimations()
        try await eventually("the visible rows requested") { records.requested.contains(0..<5) }
        records.land(Array(100..<105))
        try await eventually("records shown") { Self.shown(view) == ["record 0", "record 1", "record 100", "record 101", "record 102"] }
        #expect(view.violations.isEmpty && view.staleCells(recordsEqual: ==).isEmpty)
        withExtendedLifetime(fixture) {}
    }

    @Test("sections: rows load at their flat position, section states show as trailing rows and in headers")
    func sections() async throws {
        let fixture = Self.start([Array(0..<10), Array(10..<20)], viewportRows: 30, headerRows: 1)
        let (records, cells, view) = (fixture.records, fixture.cells, fixture.view)
        #expect(records.requested.contains(12..<13), "section 1, item 2 is flat position 12")
        cells.presenter.setLoadState(.loading, forSection: 1)
        #expect(cells.numberOfItems(inSection: 1) == 11)
        guard case let .state(block) = cells.content(at: ItemPath(section: 1, item: 10)),
              case let .section(model, state) = cells.header(forSection: 1) else {
            Issue.record("expected section 1's loading row and its header")
            return
        }
        #expect(block.kind == .loading && block.scope == .section(1) && model.id == 1 && state.description == "loading")
        records.land(Array(0..<20))
        try await eventually("records shown") { Self.shown(view).prefix(20) == ArraySlice((0..<20).map { "record \($0)" }) }
        #expect(view.violations.isEmpty && view.staleCells(recordsEqual: ==).isEmpty)
        withExtendedLifetime(fixture) {}
    }
}
