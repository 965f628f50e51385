import Foundation
import ListDiff
import ListPresenter
import ListTesting
import LiveListClient
import LiveListCommands
import LiveListWire

/// The demo's list from a `livelist serve --demo` server: a remote live query of its "inbox",
/// a cell source over its records, and a presenter driving a strict list view model — the same
/// screen as the local demo, with no database on this side.
@MainActor
final class RemoteDemoSession: DemoListView {
    typealias Cells = ListCellSource<RemoteSection, RemoteRow, RemoteRecord>
    typealias View = HeadlessListView<Cells.Content, SectionHeaderContent<RemoteSection>>

    let url: String
    let token: String?
    let remote: RemoteLiveQuery
    let presenter: ListPresenter<RemoteSection, RemoteRow>
    let cells: Cells
    let view: View
    private let dataSource: CellSourceDataSource<RemoteSection, RemoteRow, RemoteRecord>
    private(set) var sort = DemoSort.byActivity
    private(set) var filter = ""
    /// From each commit (as the server saw it) to its changes applied here, in milliseconds.
    private(set) var latencies: [Double] = []
    /// The server's time of the last commit whose latency was counted.
    private var lastCountedCommit: Int64?
    /// The main actor's work to apply each changeset, in milliseconds.
    private(set) var mainLatencies: [Double] = []
    private(set) var batches = 0
    private(set) var changes = 0
    private(set) var lastFailure: String?
    private var lines: [String] = []
    private var marks: [RemoteRowID: (mark: DemoMark, until: ContinuousClock.Instant)] = [:]
    /// The row the keyboard cursor is on, by identity.
    var cursor: RemoteRowID?

    private(set) var lastAction: String?
    /// Sends the demo's mutations (archive, read/unread, send), each applied once, under a client
    /// name of this run's own.
    let mutator: RemoteMutator

    init(url: String, token: String?, viewportRows: Int) {
        self.url = url
        self.token = token
        // The list and the mutator share one connection: a mutation's answer says the list holds its commit.
        let session = RemoteSession(url: url, transport: WebSocketTransport(token: token.map { token in { @Sendable in token } }))
        (remote, presenter, cells, view, dataSource) = Self.make(session: session, sort: .byActivity, filter: "", viewportRows: viewportRows)
        mutator = RemoteMutator(session: session, client: "terminal-" + UUID().uuidString.prefix(8).lowercased())
        connect()
    }

    func isLoaded(_ item: RemoteRow) -> Bool { remote.records.record(for: item) != nil }

    // MARK: Acting on rows: the server's published mutations

    func archiveAtCursor() {
        guard case let .row(id)? = cursor else { return }
        act("archive", ["id": id], expecting: [.delete(id: id)])
    }

    func toggleUnreadAtCursor() {
        guard let cursor, let path = remote.displayedState.path(ofItem: cursor),
              let record = remote.records.record(for: remote.displayedState.item(at: path)), case let .integer(unread)? = record["unread"] else { return }
        act("setUnread", ["id": record.id, "unread": .integer(1 - unread)], expecting: [.update(id: record.id, values: ["unread": .integer(1 - unread)])])
    }

    /// Sends a new conversation under an identity of this client's choosing (far above the
    /// database's own numbers), so that it shows at once, pending, where the server will put it.
    func send(subject: String) {
        let id = WireValue.integer(Int64.random(in: (1 << 40)..<(1 << 50)))
        let now = Int64(Date().timeIntervalSince1970)
        let values: [String: WireValue] = ["id": id, "sender": .text("Terminal"), "subject": .text(subject), "unread": .integer(0),
                                           "last_activity": .integer(now), "day": .integer(now / InboxDatabase.secondsPerDay), "version": .integer(0)]
        act("send", ["id": id, "sender": .text("Terminal"), "subject": .text(subject)], expecting: [.insert(id: id, values: values)])
    }

    /// Sends mutation `name`: the list shows its expected effect at once, pending; it waits while
    /// the server is away, and is applied once when it is back; the line says so once the list
    /// shows its commit.
    private func act(_ name: String, _ arguments: [String: WireValue], expecting changes: [PendingChange]) {
        lines.append("\(name): sent")
        lastAction = lines.last
        Task { [weak self, mutator, remote] in
            let line: String
            do {
                let mutated = try await mutator.mutate(name, arguments: arguments, expecting: [PendingEffect(remote, changes)])
                line = "\(name) \(mutated.id): applied" + (mutated.duplicate ? " (answered again after a lost connection)" : "")
            } catch let RemoteListError.server(error) {
                line = "\(name) \(error.mutation.map { String($0.id) } ?? "?"): refused, \(error.code): \(error.message)"
            } catch is CancellationError {
                return
            } catch {
                line = "\(name): \(error)"
            }
            self?.lines.append(line)
            self?.lastAction = line
        }
    }

    private static func make(session: RemoteSession, sort: DemoSort, filter: String, viewportRows: Int)
        -> (RemoteLiveQuery, ListPresenter<RemoteSection, RemoteRow>, Cells, View, CellSourceDataSource<RemoteSection, RemoteRow, RemoteRecord>) {
        let remote = RemoteLiveQuery(session: session, query: "inbox", arguments: ["sort": .text(sort.argument), "filter": .text(filter)],
                                     window: 0..<viewportRows, prefetch: 40)
        let presenter = ListPresenter<RemoteSection, RemoteRow>()
        let cells = ListCellSource(presenter: presenter, records: remote.records, prefetch: 40)
        let (view, dataSource) = cells.attachHeadlessView(realization: .visible(margin: 20), viewportRows: viewportRows, sectionHeaderRows: 1)
        return (remote, presenter, cells, view, dataSource)
    }

    /// Lets the connection run until the server's first state arrives; a server that cannot be
    /// reached or refuses the query is an input error.
    func waitForFirstState(seconds: Double) throws(InputError) {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while remote.model.version == nil {
            if case let .refused(error) = remote.connectionState { throw InputError("\(url) refused the demo's query: \(error.message)") }
            if case let .reconnecting(attempt, reason) = remote.connectionState, attempt >= 4 {
                throw InputError("cannot reach \(url) (\(attempt) attempts): \(reason)")
            }
            guard Date() < deadline else {
                throw InputError("no list from \(url) within \(Int(seconds)) s" + (lastFailure.map { ": \($0)" } ?? ""))
            }
            _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.01))
        }
    }

    private func connect() {
        let clock = ContinuousClock()
        remote.onEvent = { [weak self] event in
            guard let self else { return }
            let old = presenter.displayed.model
            let start = clock.now
            cells.receive(event)
            let main = start.duration(to: clock.now)
            switch event {
            case .initial:
                lines.append("reset: \(remote.model.state.count) rows at version \(remote.model.version.map(\.description) ?? "-")")
                lastFailure = nil
            case let .changes(changeset, _):
                mainLatencies.append(Self.milliseconds(main))
                // A commit's changes name when the server saw the commit; rows sent for a moved
                // window name none (the model keeps the last commit's time): only commits count.
                let commit = remote.model.lastObservedAt.flatMap { $0 == lastCountedCommit ? nil : $0 }
                let latency = commit.map { Double(Int64(Date().timeIntervalSince1970 * 1_000_000) - $0) / 1_000 }
                if let latency {
                    lastCountedCommit = commit
                    latencies.append(latency)
                }
                batches += 1
                changes += changeset.changes.count
                lastFailure = nil
                mark(changeset.changes, before: old, now: clock.now)
                let c = changeset.changes
                lines.append("batch \(batches): +\(c.itemInserts.count) -\(c.itemDeletes.count) moved \(c.itemMoves.count) updated \(c.itemReloads.count), sections +\(c.sectionInserts.count) -\(c.sectionDeletes.count), \(changeset.stages.count) stages, \(latency.map { String(format: "%.3f ms (wire)", $0) } ?? "rows of the window"), main \(String(format: "%.3f", mainLatencies.last ?? 0)) ms, \(remote.model.state.count) rows")
            case let .failure(failure):
                lastFailure = failure.message
                lines.append("failure: \(failure.message)")
            case .recovered:
                lastFailure = nil
            }
        }
        remote.start()
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
    }

    private func mark(_ changes: ListChanges, before: some SectionedList<RemoteSection, RemoteRow>, now: ContinuousClock.Instant) {
        let until = now.advanced(by: .milliseconds(1_500))
        let after = remote.displayedState
        for path in changes.itemReloads where path.section < before.sectionCount && path.item < before.itemCount(inSection: path.section) {
            marks[before.item(at: path).id] = (.updated, until)
        }
        for move in changes.itemMoves { marks[after.item(at: move.to).id] = (.moved, until) }
        for path in changes.itemInserts { marks[after.item(at: path).id] = (.inserted, until) }
        marks = marks.filter { $0.value.until > now }
    }

    var statusCounts: (p50: Double, p99: Double) { Self.percentiles(latencies) }

    var mainCounts: (p50: Double, p99: Double) { Self.percentiles(mainLatencies) }

    func applyEvents() -> [String] {
        defer { lines = [] }
        return lines
    }

    /// The cell source asks the remote query for the rows it shows; nothing to do here.
    func requestVisibleRows() {
        view.layoutIfNeeded()
    }

    /// A new order or filter is one call: the server moves the subscription and sends one
    /// changeset from the list shown to the new one (or a reset when they differ too much).
    func setCriteria(sort: DemoSort, filter: String) {
        self.sort = sort
        self.filter = filter
        remote.setArguments(["sort": .text(sort.argument), "filter": .text(filter)])
    }

    var rowCount: Int { remote.displayedState.count }

    var cursorPosition: Int? { cursor.flatMap { remote.displayedState.path(ofItem: $0) }.flatMap { remote.displayedState.position(of: $0) } }

    func id(atPosition position: Int) -> RemoteRowID? { remote.displayedState.row(at: position).id }

    func displayedPath(ofPosition position: Int) -> ItemPath? {
        remote.displayedState.path(ofPosition: position).map { presenter.displayed.displayedPath(ofModelPath: $0) }
    }

    func visibleLines(now: ContinuousClock.Instant) -> [DemoLine] {
        view.visibleRows.map { row in
            switch row {
            case let .header(section):
                guard case let .section(model, _)? = view.header(ofSection: section) else { return .header("") }
                let key: Int64? = if case let .integer(value) = model.id { value } else { nil }
                return .header(DemoScreen.sectionTitle(sort: sort, key: key))
            case let .item(path):
                switch view.cellContent(at: path) ?? cells.content(at: path) {
                case let .state(block):
                    switch block.kind {
                    case .loading: return .loading
                    case .failed: return .failed(block.message ?? "failed")
                    case .empty: return .empty
                    }
                case let .placeholder(row, state):
                    return .placeholder(id: "\(row.id)", failed: state.isFailed, isCursor: cursor == row.id)
                case let .record(row, record):
                    // A row the app's own mutation shows before the server answers: dimmed.
                    let mark = record.isPending ? .pending : marks[row.id].flatMap { $0.until > now ? $0.mark : nil }
                    return .conversation(Self.conversation(record), mark: mark, isSelected: view.isSelected(path), isCursor: cursor == row.id)
                }
            }
        }
    }

    static func conversation(_ record: RemoteRecord) -> InboxDatabase.Conversation {
        func text(_ name: String) -> String { if case let .text(value)? = record[name] { value } else { "" } }
        func integer(_ name: String) -> Int64 { if case let .integer(value)? = record[name] { value } else { 0 } }
        return InboxDatabase.Conversation(sender: text("sender"), subject: text("subject"), isUnread: integer("unread") != 0,
                                          lastActivity: integer("last_activity"))
    }

    func statusDetails(now: ContinuousClock.Instant) -> String {
        let (p50, p99) = statusCounts
        var status = "\(remote.model.state.count) rows · \(url) · \(connectionText) · commit→screen p50 \(String(format: "%.2f", p50)) ms p99 \(String(format: "%.2f", p99)) ms"
        status += " · main \(String(format: "%.2f", mainCounts.p50))/\(String(format: "%.2f", mainCounts.p99)) ms"
        status += " · \(batches) batches · \(remote.resetsReceived) resets"
        if mutator.pendingCount > 0 { status += " · \(mutator.pendingCount) mutations pending" }
        return status
    }

    private var connectionText: String {
        switch remote.connectionState {
        case .idle, .connecting: "connecting"
        case .live: "live"
        case let .reconnecting(attempt, _): "reconnecting (\(attempt))"
        case .refused: "refused"
        case .stopped: "stopped"
        }
    }

    /// The view's checks, then the list against a fresh subscription of the same query and window
    /// at the same version — the server's own first state, read from its result, not from the
    /// changesets this client applied. While the server's writer goes on, the two lists rarely
    /// stand at one version at the same instant: each one's recent states are kept by version, and
    /// a state of one is compared with the other's at its version.
    func finalCheck() throws -> [String] {
        // Every mutation answered first: the fresh subscription then shows them all.
        let answered = Date(timeIntervalSinceNow: 15)
        while mutator.pendingCount > 0, Date() < answered { _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.005)) }
        var problems = view.violations.map { "violation: \($0)" }
        if mutator.pendingCount > 0 { problems.append("\(mutator.pendingCount) mutations not answered within 15 s") }
        let fresh = RemoteLiveQuery(url: url, query: remote.query, arguments: remote.arguments, window: remote.model.window, prefetch: 0,
                                    transport: WebSocketTransport(token: token.map { token in { @Sendable in token } }))
        fresh.start()
        defer { fresh.stop() }
        let deadline = ContinuousClock.now + .seconds(15)
        var shownStates = RecentStates(), freshStates = RecentStates()
        var difference: String? = "no common version with a fresh subscription within 15 s"
        var equalAtSomeVersion = false
        while ContinuousClock.now < deadline {
            _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.005))
            // The fresh subscription holds at least the rows this list holds (its window moves on
            // as the list scrolls and grows).
            fresh.showRows(at: remote.model.window)
            let caughtUp = remote.model.requestedWindow == nil && remote.pendingChangesCount == 0
                && presenter.displayed.model.stateID == remote.displayedState.stateID
            var pairs: [(RemoteListModel, RemoteListModel)] = []
            if let version = fresh.model.version, fresh.model.requestedWindow == nil {
                freshStates.keep(fresh.model, at: version)
                if let shown = shownStates.state(at: version) { pairs.append((shown, fresh.model)) }
            }
            if let version = remote.model.version, caughtUp {
                shownStates.keep(remote.model, at: version)
                if let other = freshStates.state(at: version) { pairs.append((remote.model, other)) }
            }
            for (shown, other) in pairs where !equalAtSomeVersion && Self.holds(other, rowsOf: shown) {
                difference = Self.difference(shown, other)
                equalAtSomeVersion = difference == nil
            }
            // The cells on screen show the records of the list they display.
            if equalAtSomeVersion, caughtUp {
                let stale = view.staleCells(recordsEqual: ==)
                difference = stale.first.map { path in
                    "stale cells at \(stale): \(path) shows \(String(describing: view.cellContent(at: path))), its source \(dataSource.cell(at: path))"
                }
                if stale.isEmpty { break }
            }
        }
        if var difference {
            if !equalAtSomeVersion { difference += " (this list's latest versions: \(shownStates.latest); the fresh one's: \(freshStates.latest))" }
            problems.append("the displayed list differs from a fresh subscription: \(difference)")
        }
        return problems
    }

    /// A list's latest states by version (the newest 256).
    struct RecentStates {
        private var states: [WireVersion: RemoteListModel] = [:]
        private var order: [WireVersion] = []

        /// Keeps `model` as the state at `version` (the latest seen: rows of the window may have
        /// arrived since the version did).
        mutating func keep(_ model: RemoteListModel, at version: WireVersion) {
            if states.updateValue(model, forKey: version) == nil { order.append(version) }
            if order.count > 256 { states[order.removeFirst()] = nil }
        }

        func state(at version: WireVersion) -> RemoteListModel? { states[version] }
        /// The newest versions kept, for a report.
        var latest: String { order.suffix(5).map(\.description).joined(separator: " ") }
    }

    /// Whether `fresh`'s window holds every row of `shown`'s.
    static func holds(_ fresh: RemoteListModel, rowsOf shown: RemoteListModel) -> Bool {
        let rows = shown.window.clamped(to: 0..<shown.state.count)
        return rows.isEmpty || (fresh.window.lowerBound <= rows.lowerBound && rows.upperBound <= fresh.window.upperBound)
    }

    /// Why two models of the same query and window differ (`nil`: they are equal).
    static func difference(_ shown: RemoteListModel, _ fresh: RemoteListModel) -> String? {
        guard shown.state.keys == fresh.state.keys, shown.state.counts == fresh.state.counts else {
            return "sections \(shown.state.counts) vs \(fresh.state.counts)"
        }
        for position in shown.window.clamped(to: 0..<shown.state.count) {
            let row = shown.state.row(at: position), expected = fresh.state.row(at: position)
            guard row.id == expected.id else { return "row \(position): \(row.id) vs \(expected.id)" }
            guard let record = shown.record(for: row) else { return "row \(position): no record" }
            guard let values = fresh.record(for: expected)?.values else { return "row \(position): not sent to the fresh subscription" }
            guard record.values == values else { return "row \(position): \(record.values) vs \(values)" }
        }
        return nil
    }
}

extension DemoSort {
    /// The served demo query's `sort` argument for this order.
    var argument: String {
        switch self {
        case .byActivity: "activity"
        case .bySender: "sender"
        case .unreadFirst: "unread"
        }
    }
}
