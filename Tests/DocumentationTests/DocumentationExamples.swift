// Every Swift example of the README, the DocC catalogs and the doc comments of the Linux modules,
// verbatim, in the context it needs: if an example stops compiling, the test target does.
// `DocumentationExamplesTests` checks that each example appears here line for line.
import Foundation
import GRDB
import ListDiff
import ListPresenter
import ListTesting
import LiveQuery

// MARK: - README

struct Contact: Codable, FetchableRecord, TableRecord, Sendable {
    var id: Int64
    var name: String
}

struct Conversation: Codable, FetchableRecord, TableRecord, Sendable {
    static let contact = belongsTo(Contact.self)
    var uuid: UUID
    var contactId: Int64
    var subject: String
    var lastActivity: Date
}

struct ConversationRow: Decodable, FetchableRecord, Sendable {   // a conversation with its contact
    var conversation: Conversation
    var contact: Contact
}

@MainActor
func showInbox(from dbPool: DatabasePool, in view: some ListTarget) async throws {
    let contacts = TableAlias()
    let conversations = Conversation
        .including(required: Conversation.contact.aliased(contacts))   // many-to-one: incremental
        .filter(Column("archived") == false)
        .order(contacts[Column("name")], Column("lastActivity").desc)
        .asRequest(of: ConversationRow.self)
    let request = LiveQueryRequest(conversations, identity: "conversation.uuid", as: UUID.self)
    let query = try await LiveQuery.open(request, in: dbPool)   // validates, builds the index off the main actor
    let rows = RowCache<UUID, ConversationRow>(query: query, reader: dbPool)   // records, by page
    let presenter = ListPresenter<LiveSection, LiveRow<UUID>>()
    presenter.target = view                                      // its data source reads presenter.displayed
    for await event in query.events {                            // any number of consumers, each from the current result
        switch event {
        case .initial(let result):
            rows.update(result: result)
            presenter.replace(with: result)                      // one reload, no diff
        case .update(let update):
            rows.update(result: update.result)
            presenter.apply(update.changeset)                    // as it is: no copy, no diff
        case .failure(let error): presenter.setLoadState(.failed(LoadFailure(error, retry: {})))
        }
    }
}

func configureCells(_ rows: RowCache<UUID, ConversationRow>, visibleRange: Range<Int>) {
    for slot in rows.rows(in: visibleRange, prefetch: 40) {   // .loaded(row, record) or .placeholder(row)
        if case let .loaded(row, record) = slot { print(row.id, record.contact.name, record.conversation.subject) }
    }
    switch rows.pageState(0) {
    case .notLoaded, .loading, .loaded: break
    case .failed(let failure): failure.retry()
    }
}

func unreadByContact(in dbPool: DatabasePool) async throws -> LiveQuery<Int64> {
    let request = LiveQueryRequest(sql: """
        SELECT message.*, contact.name FROM message
        JOIN contact ON contact.id = message.contact_id
        WHERE message.unread = ?
        ORDER BY contact.name, message.date DESC
        """, arguments: [true], section: "contact.name")     // sections in sort order, like sectionNameKeyPath
    let explanation = try await LiveQuery.explain(request, in: dbPool)
    print(explanation)                                        // "incremental", or "refetch (why)", and notes
    return try await LiveQuery.open(request, in: dbPool)
}

@MainActor
func inboxModel(_ query: LiveQuery<UUID>, _ dbPool: DatabasePool) -> LiveQueryModel<UUID, ConversationRow> {
    let model = LiveQueryModel<UUID, ConversationRow>(query: query, reader: dbPool)
    if let first = model.indexPath(of: UUID()), case let .loaded(_, row)? = model.record(at: first) {
        print(row.contact.name, model.sectionIndexTitles)
    }
    return model
}

enum ReadmeDiff {
typealias Row = VersionedItem<Int64, Int>            // identity + content version
typealias Day = VersionedItem<String, Int>

func whatChanged() -> Changeset<Day, Row> {
    let old = ListSnapshot<Day, Row>(sections: [
        SnapshotSection(Day(id: "Today"), items: [Row(id: 1, version: 0), Row(id: 2, version: 0)]),
    ])
    let new = ListSnapshot<Day, Row>(sections: [
        SnapshotSection(Day(id: "Today"), items: [Row(id: 2, version: 1), Row(id: 3, version: 0)]),
    ])
    let changeset = Changeset(from: old, to: new)
    _ = changeset.changes.itemDeletes   // [[0, 0]]   row 1 left (old index)
    _ = changeset.changes.itemInserts   // [[0, 1]]   row 3 entered (new index)
    _ = changeset.changes.itemReloads   // [[0, 1]]   row 2 changed content (old index)
    return changeset
}

@MainActor
func applies(_ changeset: Changeset<Day, Row>, from old: ListSnapshot<Day, Row>) throws -> Bool {
    let dataSource = SnapshotDataSource(old)
    let view = HeadlessListView(dataSource: dataSource)
    try view.apply(changeset, to: dataSource)
    return view.staleCells().isEmpty   // every cell shows its row's current content
}
}


// MARK: - DocC catalogs

enum ListDiffCatalog {
    func adjacentPages(_ changeset: Changeset<VersionedItem<String, Int>, VersionedItem<Int64, Int>>) -> Int {
        let mapping = PathMapping(changeset.changes)
        let first = ItemPath(section: 0, item: 0)
        return mapping.newPath(ofOld: first)?.item ?? -1      // where the first row went
    }
}

enum ListPresenterCatalog {
    @MainActor
    func showStates(of presenter: ListPresenter<VersionedItem<String, Int>, VersionedItem<Int64, Int>>) {
        presenter.setLoadState(.loading)                         // a loading row above the list
        presenter.setLoadState(.loaded)                          // gone again
        presenter.scrollToItem(id: 42, animated: true)           // after the batch, at row 42's new place
    }
}

enum ListTestingCatalog {
    @MainActor
    func drive(_ presenter: ListPresenter<VersionedItem<Int, Int>, VersionedItem<Int, Int>>) -> Bool {
        let (view, dataSource) = presenter.attachHeadlessView(viewportRows: 20)
        view.layoutIfNeeded()
        return withExtendedLifetime(dataSource) { view.violations.isEmpty }
    }
}

enum LiveQueryCatalog {
    func openSorted(_ dbQueue: DatabaseQueue) async throws -> LiveQuery<Int64> {
        let query = try await LiveQuery.open(LiveQueryRequest(table: "tag", sort: [SortTerm("label")]), in: dbQueue)
        if case let .refetch(reason) = query.mode { print("refetched on each commit: \(reason)") }
        return query
    }
}

// MARK: - Doc comments: ListDiff

enum ChangesetDoc {
    typealias Row = ReadmeDiff.Row
    typealias Day = ReadmeDiff.Day

    @MainActor
    static func run(displayed: ListSnapshot<Day, Row>, latest: ListSnapshot<Day, Row>,
                    view: HeadlessListView<Row, Day>, dataSource: SnapshotDataSource<Day, Row>) throws {
        let changeset = Changeset(from: displayed, to: latest)
        for stage in changeset.stages {
            try view.performBatchUpdates {
                dataSource.snapshot = stage.snapshot
                try view.apply(stage.changes)
            }
        }
    }
}

enum ChangesetStageDoc {
    typealias Row = ReadmeDiff.Row
    typealias Day = ReadmeDiff.Day

    @MainActor
    func apply(_ changeset: Changeset<Day, Row>, to view: HeadlessListView<Row, Day>,
               dataSource: SnapshotDataSource<Day, Row>) throws {
        for stage in changeset.stages {
            try view.performBatchUpdates {
                dataSource.snapshot = stage.snapshot   // the data source moves first…
                try view.apply(stage.changes)          // …then the view is told, inside the same batch
            }
        }
    }
}

enum ListElementDoc {
    struct Message: ListElement {
        var id: Int64
        var version: Int
        func isContentEqual(to other: Message) -> Bool { version == other.version }
    }
}

enum ListSnapshotDoc {
    static func run() {
        typealias Row = VersionedItem<Int64, Int>
        let snapshot = ListSnapshot<VersionedItem<String, Int>, Row>(sections: [
            SnapshotSection(VersionedItem(id: "Today"), items: [Row(id: 1, version: 3), Row(id: 2, version: 1)]),
        ])
        _ = snapshot
    }
}

enum LoadStateDoc {
    static func showSpinner() {}
    static func showRows() {}
    static func showEmptyMessage() {}
    static func showError(_ message: String, retry: @escaping @Sendable () -> Void) {}

    static func run(state: LoadState) {
        switch state {
        case .loading: showSpinner()
        case .loaded: showRows()
        case .empty: showEmptyMessage()
        case .failed(let failure): showError(failure.message, retry: failure.retry)
        }
    }
}

enum PathMappingDoc {
    static func run() {
        var changes = ListChanges()
        changes.itemInserts = [ItemPath(section: 0, item: 0)]
        let mapping = PathMapping(changes)
        assert(mapping.newPath(ofOld: ItemPath(section: 0, item: 0)) == ItemPath(section: 0, item: 1))   // pushed down
    }
}

enum SectionedListDoc {
    func render(_ list: some SectionedList<VersionedItem<String, Int>, VersionedItem<Int64, Int>>) {
        for section in 0..<list.sectionCount {
            print(list.section(at: section).id, list.itemCount(inSection: section))
        }
    }
}

enum VersionedItemDoc {
    static func run() {
        let row = VersionedItem(id: 42 as Int64, version: 7)
        _ = row
    }
}

// MARK: - Doc comments: ListPresenter

enum ListPresenterDoc {
    typealias Day = VersionedItem<String, Int>
    typealias Message = VersionedItem<Int64, Int>

    @MainActor
    func present(_ first: ListSnapshot<Day, Message>, then next: ListSnapshot<Day, Message>, on view: some ListTarget) {
        let presenter = ListPresenter<Day, Message>()
        presenter.target = view
        presenter.replace(with: first)                      // a first state: one reload, no diff
        presenter.apply(Changeset(from: first, to: next))   // a changeset from where it is: applied as it is
    }
}

enum PresentedListDoc {
    @MainActor
    func numberOfSections(_ presenter: ListPresenter<VersionedItem<Int, Int>, VersionedItem<Int, Int>>) -> Int {
        presenter.displayed.sectionCount
    }
}

enum PresentedRowDoc {
    typealias Row = ReadmeDiff.Row
    typealias Day = ReadmeDiff.Day

    final class Cell {}
    static func configure(_ cell: Cell, with message: Row) {}
    static func configure(_ cell: Cell, with block: StateBlock<String>) {}

    @MainActor
    static func run(presenter: ListPresenter<Day, Row>, path: ItemPath, cell: Cell) {
        switch presenter.displayed[path] {
        case .item(let message): configure(cell, with: message)
        case .block(let block): configure(cell, with: block)
        }
    }
}

// MARK: - Doc comments: ListTesting

enum HeadlessListViewDoc {
    @MainActor
    func check(from old: ListSnapshot<SingleSection, VersionedItem<Int, Int>>,
               to new: ListSnapshot<SingleSection, VersionedItem<Int, Int>>) throws -> Bool {
        let dataSource = SnapshotDataSource(old)
        let view = HeadlessListView(dataSource: dataSource)
        view.layoutIfNeeded()
        try view.apply(Changeset(from: old, to: new), to: dataSource)
        return view.staleCells().isEmpty
    }
}

enum SeededRandomNumberGeneratorDoc {
    static func run(rows: [Int]) {
        var random = SeededRandomNumberGenerator(seed: 42)
        let shuffled = rows.shuffled(using: &random)
        _ = shuffled
    }
}

// MARK: - Doc comments: LiveQuery

enum LiveIdentityDoc {
    static func run() {
        let request = LiveQueryRequest(table: "contact", identity: "uuid", as: UUID.self,
                                       sort: [SortTerm("name")])
        _ = request
    }
}

enum LiveQueryDoc {
    func follow(_ dbQueue: DatabaseQueue) async throws {
        let request = LiveQueryRequest(table: "conversation", sort: [SortTerm("name")])
        let query = try await LiveQuery.open(request, in: dbQueue)
        for await event in query.events {
            switch event {
            case .initial(let result): print("\(result.count) rows")
            case .update(let update): print("\(update.changeset.changes.count) changes, \(update.path)")
            case .failure(let error): print("failed: \(error)")
            }
        }
    }
}

enum LiveQueryRequestDoc {
    static func run() {
        let inbox = LiveQueryRequest(
            table: "conversation",
            filter: .init("archived = 0 AND folder = ?", arguments: [3]),
            sort: [SortTerm("day", .descending), SortTerm("last_activity", .descending)],
            section: "day",
            version: "version")
        _ = inbox
    }
}

enum LiveResultDoc {
    func firstPage(of result: LiveResult<Int64>) -> [Int64] {
        result.rows(in: 0..<50).map(\.id)             // identities of the first page
    }
}

enum PageStateDoc {
    static func showPlaceholders() {}
    static func showShimmer() {}
    static func showRetry(_ message: String, _ retry: @escaping @Sendable () -> Void) {}

    static func run(cache: RowCache<Int64, String>, page: Int) {
        switch cache.pageState(page) {
        case .notLoaded: showPlaceholders()
        case .loading: showShimmer()
        case .loaded: break
        case .failed(let failure): showRetry(failure.message, failure.retry)
        }
    }
}

enum RowCacheDoc {
    struct Conversation: Sendable {
        var sender: String
        var subject: String
    }

    @MainActor static func reconfigure(_ ids: [Int64]) {}

    static func run(dbPool: DatabasePool, update: LiveQueryUpdate<Int64>, visibleRange: Range<Int>) {
        let cache = RowCache(pageSize: 50, maximumPages: 40, loader: RowCache<Int64, Conversation>.tableLoader(
            reader: dbPool, table: "conversation", columns: ["sender", "subject"]) { row in
                Conversation(sender: row["sender"], subject: row["subject"]) })
        cache.onRowsLoaded = { ids in Task { @MainActor in reconfigure(ids) } }
        cache.update(result: update.result)               // after every live query update
        let slots = cache.rows(in: visibleRange, prefetch: 40)
        _ = slots
    }
}

enum SQLTextDoc {
    static func run() {
        let composed: SQLText = "é"                       // C3 A9
        let decomposed = SQLText("e\u{301}")              // 65 CC 81
        assert(composed != decomposed)                    // different, as in SQLite
        assert(composed.string == decomposed.string)      // equal, as Swift strings
    }
}

enum SortTermDoc {
    static func run() {
        let terms = [SortTerm("lastActivity", .descending), SortTerm("name", collation: .nocase, nulls: .last)]
        _ = terms
    }
}

// MARK: - Doc comments: LiveQuery (joins, records, models)

enum LiveQueryRequestSelectDoc {
    static func run() {
        let request = LiveQueryRequest(
            Conversation.including(required: Conversation.contact).order(sql: "contact.name, conversation.lastActivity"),
            identity: "conversation.uuid", as: UUID.self)
        _ = request
    }
}

enum RecordLoaderDoc {
    func conversations(_ query: LiveQuery<UUID>, _ dbPool: DatabasePool) -> RowCache<UUID, ConversationRow> {
        RowCache(pageSize: 50, loader: query.recordLoader(as: ConversationRow.self, reader: dbPool))
    }
}

enum LiveQueryModelDoc {
    @MainActor
    func makeModel(_ query: LiveQuery<UUID>, _ dbPool: DatabasePool) -> LiveQueryModel<UUID, ConversationRow> {
        LiveQueryModel(query: query, reader: dbPool)
    }
}

enum LiveQueryExplanationDoc {
    func check(_ dbQueue: DatabaseQueue) async throws {
        let request = LiveQueryRequest(sql: "SELECT * FROM track ORDER BY length(title)")
        let explanation = try await LiveQuery.explain(request, in: dbQueue)
        print(explanation)   // refetch (an ORDER BY expression (length(title)))
    }
}

enum ChangeTrackingDoc {
    func migrate(_ dbPool: DatabasePool) throws {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("livelist change tracking") { db in
            try ChangeTracking.install(on: db, tables: ["conversation", "contact"])
        }
        try migrator.migrate(dbPool)
    }
}

enum LiveQueryErrorDoc {
    func isBusy(_ error: LiveQueryError) -> Bool {
        error.databaseError?.resultCode == .SQLITE_BUSY
    }
}

enum UpToDateDoc {
    func rename(_ id: Int64, to name: String, in dbQueue: DatabaseQueue, _ query: LiveQuery<Int64>) async throws -> Int? {
        try await dbQueue.write { db in
            try db.execute(sql: "UPDATE contact SET name = ? WHERE id = ?", arguments: [name, id])
        }
        let result = try await query.upToDate()
        return result.position(of: id)   // where the renamed row sits now
    }
}
