import LiveListTools
import Foundation
import GRDB
import ListDiff
import ListPresenter
import ListTesting
import LiveListCommands
import LiveQuery

/// The demo's pipeline, shared by the terminal screen and the headless run: a live query over the
/// inbox, a row cache for the cells, and a presenter driving a strict list view model.
@MainActor
final class DemoSession: DemoListView {
    typealias Row = PresentedRow<LiveSection, LiveRow<Int64>>
    typealias Mark = DemoMark

    /// Events from the live query (appended on the database queue) and rows the cache loaded
    /// (appended on a loader thread), taken on the main thread.
    final class Inbox: Sendable {
        private let state = Locked((events: [LiveQueryEvent<Int64>](), loaded: [Int64]()))
        func append(_ event: LiveQueryEvent<Int64>) { state.withLock { $0.events.append(event) } }
        func drain() -> [LiveQueryEvent<Int64>] { state.withLock { state in defer { state.events = [] }; return state.events } }
        func rowsLoaded(_ ids: [Int64]) { state.withLock { $0.loaded += ids } }
        func drainLoaded() -> [Int64] { state.withLock { state in defer { state.loaded = [] }; return state.loaded } }
    }

    let database: DatabaseQueue
    let inbox = Inbox()
    private(set) var query: LiveQuery<Int64>
    let presenter = ListPresenter<LiveSection, LiveRow<Int64>>()
    let view: HeadlessListView<Row, PresentedSection<LiveSection>>
    let dataSource: PresenterDataSource<LiveSection, LiveRow<Int64>>
    let cache: RowCache<Int64, InboxDatabase.Conversation>
    private(set) var sort = DemoSort.byActivity
    private(set) var filter = ""
    private(set) var result: LiveResult<Int64>
    /// From each commit to its changeset, in milliseconds.
    private(set) var latencies: [Double] = []
    /// The presenter's work on the main actor for each update (the view's included), in
    /// milliseconds.
    private(set) var mainLatencies: [Double] = []
    private(set) var batches = 0
    private(set) var changes = 0
    private(set) var lastFailure: String?
    private(set) var marks: [Int64: (mark: Mark, until: ContinuousClock.Instant)] = [:]
    private(set) var recentlyDeleted: (count: Int, until: ContinuousClock.Instant)?
    /// The row the keyboard cursor is on, by identity.
    var cursor: Int64?
    /// What the last actions on rows came to, for the next ``applyEvents()``.
    private var actions: [String] = [] {
        didSet { if let last = actions.last { lastAction = last } }
    }
    private(set) var lastAction: String?

    init(database: DatabaseQueue, viewportRows: Int) throws {
        self.database = database
        let inbox = inbox
        let request = DemoSort.byActivity.request(filter: "")
        do {
            query = try waitFor {
                try await LiveQuery<Int64>.open(request, in: database, options: .init(dataVersionPollInterval: .milliseconds(250)),
                                                callbackQueue: nil, onEvent: { inbox.append($0) })
            }
        } catch {
            throw InputError("cannot open the live query: \(error)")
        }
        result = query.initialResult
        let conversation: @Sendable (GRDB.Row) -> InboxDatabase.Conversation = { row in
            InboxDatabase.Conversation(sender: row["sender"], subject: row["subject"], isUnread: row["unread"], lastActivity: row["last_activity"])
        }
        // A conversation the writer changes shows its new record in the batch that moves it: the
        // cache takes it from the query's re-read at the commit, not from a page read after.
        cache = RowCache(pageSize: 50, maximumPages: 40, loader: RowCache.tableLoader(
            reader: database, table: "conversation", columns: ["sender", "subject", "unread", "last_activity"], decode: conversation),
            committed: query.committedRecords(conversation))
        cache.update(result: result)
        cache.onRowsLoaded = { [inbox] ids in inbox.rowsLoaded(ids) }
        // Like a real list view, the view holds only the cells around its viewport.
        (view, dataSource) = presenter.attachHeadlessView(realization: .visible(margin: 20), viewportRows: viewportRows, sectionHeaderRows: 1)
        presenter.replace(with: result)   // the first state: a reload, no diff
        view.layoutIfNeeded()
        cursor = result.row(at: 0)?.id
    }

    /// Applies what the live query delivered since the last call — each changeset as it is, on
    /// the presenter's direct path — and returns one line per batch.
    func applyEvents() -> [String] {
        var lines = actions
        actions = []
        let clock = ContinuousClock()
        let events = inbox.drain()
        for event in events {
            switch event {
            case .initial:
                continue
            case let .update(update):
                let previous = result
                result = update.result
                cache.update(with: update)
                markChanges(update.changeset.changes, before: previous, after: update.result, now: clock.now)
                let milliseconds = Double(update.latency.components.attoseconds) / 1e15 + Double(update.latency.components.seconds) * 1000
                latencies.append(milliseconds)
                if case .failed = presenter.listState { presenter.setLoadState(.loaded) }
                let start = clock.now
                presenter.apply(update.changeset)
                let main = start.duration(to: clock.now)
                mainLatencies.append(Double(main.components.attoseconds) / 1e15 + Double(main.components.seconds) * 1000)
                batches += 1
                changes += update.changeset.changes.count
                lastFailure = nil
                let c = update.changeset.changes
                let path = update.path == .incremental ? "incremental" : "refetch"
                lines.append("batch \(batches): +\(c.itemInserts.count) -\(c.itemDeletes.count) moved \(c.itemMoves.count) updated \(c.itemReloads.count), sections +\(c.sectionInserts.count) -\(c.sectionDeletes.count), \(update.changeset.stages.count) stages, \(String(format: "%.3f", milliseconds)) ms (\(path)), main \(String(format: "%.3f", mainLatencies.last ?? 0)) ms, \(update.result.count) rows")
            case let .failure(error):
                lastFailure = error.description
                lines.append("failure: \(error)")
                // Shown inline as the list's error row; the query keeps following the database,
                // and the next good update clears it.
                presenter.setLoadState(.failed(LoadFailure(error, retry: {})))
            }
        }
        // Cells whose rows just loaded re-read their content in place.
        let loaded = inbox.drainLoaded()
        if !loaded.isEmpty { presenter.reconfigureItems(ids: loaded) }
        return lines
    }

    private func markChanges(_ changes: ListChanges, before: LiveResult<Int64>, after: LiveResult<Int64>, now: ContinuousClock.Instant) {
        let until = now.advanced(by: .milliseconds(1_500))
        func id(_ path: ItemPath, in result: LiveResult<Int64>) -> Int64? { result.position(of: path).flatMap { result.row(at: $0)?.id } }
        for path in changes.itemReloads { if let id = id(path, in: before) { marks[id] = (.updated, until) } }
        for move in changes.itemMoves { if let id = id(move.to, in: after) { marks[id] = (.moved, until) } }
        for path in changes.itemInserts { if let id = id(path, in: after) { marks[id] = (.inserted, until) } }
        if !changes.itemDeletes.isEmpty { recentlyDeleted = (changes.itemDeletes.count, until) }
        marks = marks.filter { $0.value.until > now }
    }

    func mark(of id: Int64, now: ContinuousClock.Instant) -> Mark? {
        guard let mark = marks[id], mark.until > now else { return nil }
        return mark.mark
    }

    func deletedBadge(now: ContinuousClock.Instant) -> Int? {
        guard let deleted = recentlyDeleted, deleted.until > now else { return nil }
        return deleted.count
    }

    /// Changes the order or the filter: one changeset from what is shown to the new result.
    func setCriteria(sort: DemoSort, filter: String) {
        self.sort = sort
        self.filter = filter
        let request = sort.request(filter: filter)
        let query = query
        do {
            try waitFor { try await query.setRequest(request) }
        } catch {
            lastFailure = "\(error)"
        }
    }

    /// Loads the pages around the visible rows.
    func requestVisibleRows() {
        let visible = view.visibleItems
        // Positions only grow along the visible paths: the first and the last item rows suffice.
        guard let first = visible.lazy.compactMap(flatPosition).first,
              let last = visible.reversed().lazy.compactMap(flatPosition).first else { return }
        _ = cache.rows(in: first..<last + 1, prefetch: 50)
    }

    /// The position in the live result of a displayed path (state rows have none): O(log n).
    func flatPosition(_ path: ItemPath) -> Int? {
        presenter.displayed.modelPath(ofDisplayed: path).flatMap { result.position(of: $0) }
    }

    /// The displayed path of the row at `position` of the live result: O(log n).
    func displayedPath(ofPosition position: Int) -> ItemPath? {
        result.itemPath(ofPosition: position).map { presenter.displayed.displayedPath(ofModelPath: $0) }
    }

    var statusCounts: (p50: Double, p99: Double) { Self.percentiles(latencies) }

    var mainCounts: (p50: Double, p99: Double) { Self.percentiles(mainLatencies) }

    /// Whether the displayed list equals a fresh query of the database now (O(n): once, at the end).
    func matchesFreshQuery() throws -> Bool {
        let (sql, arguments) = sort.oracleSQL(filter: filter)
        let expected = try database.read { db in try Int64.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)) }
        let shown = presenter.displayed.model.snapshot.sections.flatMap { $0.items.map(\.id) }
        return shown == expected
    }
}

extension DemoSession {
    var rowCount: Int { result.count }

    var cursorPosition: Int? { cursor.flatMap { presenter.displayed.path(ofItem: .item($0)) }.flatMap(flatPosition) }

    func id(atPosition position: Int) -> Int64? { result.row(at: position)?.id }

    func visibleLines(now: ContinuousClock.Instant) -> [DemoLine] {
        let displayed = presenter.displayed
        return view.visibleRows.map { row in
            switch row {
            case let .header(section):
                let key: Int64? = if case let .integer(value)? = displayed.section(at: section).model?.id { value } else { nil }
                return .header(DemoScreen.sectionTitle(sort: sort, key: key))
            case let .item(path):
                switch view.cellContent(at: path) ?? displayed.item(at: path) {
                case let .block(block):
                    switch block.kind {
                    case .loading: return .loading
                    case .failed: return .failed(block.message ?? "failed")
                    case .empty: return .empty
                    }
                case let .item(row):
                    guard let conversation = cache.content(of: row.id, version: row.version) else {
                        return .placeholder(id: "\(row.id)", failed: false, isCursor: cursor == row.id)
                    }
                    return .conversation(conversation, mark: mark(of: row.id, now: now), isSelected: view.isSelected(path), isCursor: cursor == row.id)
                }
            }
        }
    }

    func statusDetails(now: ContinuousClock.Instant) -> String {
        let (p50, p99) = statusCounts
        let statistics = cache.statistics
        var status = "\(result.count) rows · changeset p50 \(String(format: "%.2f", p50)) ms p99 \(String(format: "%.2f", p99)) ms"
        status += " · main \(String(format: "%.2f", mainCounts.p50))/\(String(format: "%.2f", mainCounts.p99)) ms"
        status += " · \(batches) batches · \(statistics.pageQueries) page queries · \(statistics.cacheHits) cache hits"
        if let deleted = deletedBadge(now: now) { status += " · −\(deleted) deleted" }
        return status
    }

    func isLoaded(_ item: LiveRow<Int64>) -> Bool { cache.content(of: item.id, version: item.version) != nil }

    // MARK: Acting on rows: the demo's mutations, run on the local database

    func archiveAtCursor() {
        guard let id = cursor else { return }
        act("archive", ["id": id])
    }

    func toggleUnreadAtCursor() {
        guard let id = cursor else { return }
        do {
            guard let unread = try database.read({ db in try Int64.fetchOne(db, sql: "SELECT unread FROM conversation WHERE id = ?", arguments: [id]) }) else { return }
            act("setUnread", ["id": id, "unread": 1 - unread])
        } catch {
            actions.append("setUnread failed: \(error)")
        }
    }

    func send(subject: String) {
        act("send", ["sender": "Terminal", "subject": subject])
    }

    /// Runs the mutation; the live query shows its commit as it shows any other.
    private func act(_ name: String, _ arguments: [String: DatabaseValueConvertible]) {
        do {
            actions.append(try DemoMutations.run(name, arguments: arguments, in: database) ? "\(name) applied" : "\(name) refused: no such conversation in the inbox")
        } catch {
            actions.append("\(name) failed: \(error)")
        }
    }

    func finalCheck() throws -> [String] {
        try waitFor { [cache] in await cache.waitForLoads() }
        var problems = view.violations.map { "violation: \($0)" } + view.staleCells().map { "stale cell at \($0)" }
        if !(try matchesFreshQuery()) { problems.append("the displayed list differs from a fresh query") }
        return problems
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
