import Foundation
import GRDB
import ListDiff
import ListTesting
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// A row as a fresh SELECT returns it: identity and section key as stored, and its content.
struct OracleRow {
    var identity: SQLValue
    var section: SQLValue
    var content: String
}

/// A cell of the oracle's list view: the row's identity, its token, and the row's content as the
/// oracle (a fresh SELECT) saw it when the view configured the cell. A cell whose content is not
/// the oracle's current one is a content change the changesets did not reload.
struct OracleCell<ID: LiveIdentity>: ListElement, Hashable {
    var id: ID
    var token: UInt64
    var content: String

    func isContentEqual(to other: OracleCell) -> Bool { token == other.token && content == other.content }
}

/// Shows a stage's state, with each row's content from the oracle.
@MainActor
final class OracleDataSource<ID: LiveIdentity>: HeadlessListDataSource {
    var state: AnySectionedList<LiveSection, LiveRow<ID>>
    var contents: [ID: String] = [:]

    init(_ state: some SectionedList<LiveSection, LiveRow<ID>>) {
        self.state = AnySectionedList(state)
    }

    func numberOfSections() -> Int { state.sectionCount }
    func numberOfItems(inSection section: Int) -> Int { state.itemCount(inSection: section) }
    func cell(at path: ItemPath) -> OracleCell<ID> {
        let row = state.item(at: path)
        return OracleCell(id: row.id, token: row.version, content: contents[row.id] ?? "?")
    }
    func header(forSection section: Int) -> LiveSection { state.section(at: section) }
}

/// How the updates of an oracle run were computed, and what failed.
struct OracleTally {
    var incremental = 0
    var refetched = 0
    var failures: [String] = []
}

extension HeadlessListView {
    /// Applies `update`'s stages as a data source driven by changesets does: each stage's state,
    /// then its changes, inside one batch.
    func apply<ID: LiveIdentity>(_ update: LiveQueryUpdate<ID>, to dataSource: OracleDataSource<ID>) throws
    where Cell == OracleCell<ID>, Header == LiveSection {
        for stage in update.changeset.stages {
            try performBatchUpdates { () throws(BatchUpdateViolation) in
                dataSource.state = stage.state
                try apply(stage.changes)
            }
        }
    }

    /// Applies every update among `events`, counting how each was computed and collecting the
    /// failures; throws the first batch the view rejects.
    func apply<ID: LiveIdentity>(_ events: [LiveQueryEvent<ID>], to dataSource: OracleDataSource<ID>, tally: inout OracleTally,
                                 each: (LiveQueryUpdate<ID>) -> Void = { _ in }) throws
    where Cell == OracleCell<ID>, Header == LiveSection {
        for event in events {
            switch event {
            case .initial: break
            case let .update(update):
                if update.path == .incremental { tally.incremental += 1 } else { tally.refetched += 1 }
                each(update)
                do {
                    try apply(update, to: dataSource)
                } catch {
                    throw UnexpectedEvent(description: "\(error), path \(update.path)")
                }
            case let .failure(error):
                tally.failures.append("\(error)")
            }
        }
    }

    /// The rows on screen, in order, with their section keys.
    func shownRows<ID: LiveIdentity>(_ dataSource: OracleDataSource<ID>) -> [(section: SQLValue, id: SQLValue)]
    where Cell == OracleCell<ID>, Header == LiveSection {
        var shown: [(SQLValue, SQLValue)] = []
        for section in 0..<numberOfSections() {
            let key = dataSource.state.section(at: section).id
            for item in 0..<numberOfItems(inSection: section) {
                guard let cell = cellContent(at: ItemPath(section: section, item: item)) else { continue }
                shown.append((key, cell.id.identityValue))
            }
        }
        return shown
    }
}

/// The strict headless view of an oracle test, driven only by a live query's changesets, and the
/// fresh SELECT it is compared with.
@MainActor
final class OracleHarness<ID: LiveIdentity> {
    let dataSource: OracleDataSource<ID>
    let view: HeadlessListView<OracleCell<ID>, LiveSection>
    var tally = OracleTally()
    private(set) var expected: [OracleRow] = []

    init(_ initial: LiveResult<ID>, expected rows: [OracleRow]) {
        dataSource = OracleDataSource(initial)
        view = HeadlessListView(dataSource: dataSource)
        expect(rows)
        view.layoutIfNeeded()
    }

    /// What a fresh SELECT returns now; cells configured from here on show this content.
    func expect(_ rows: [OracleRow]) {
        expected = rows
        for row in rows { if let id = ID(identityValue: row.identity) { dataSource.contents[id] = row.content } }
    }

    /// Applies every update among `events` (see ``HeadlessListView/apply(_:to:tally:each:)``).
    func apply(_ events: [LiveQueryEvent<ID>], each: (LiveQueryUpdate<ID>) -> Void = { _ in }) throws {
        try view.apply(events, to: dataSource, tally: &tally, each: each)
    }

    /// One step of a random run: expects `rows`, then applies `events`. An update after a
    /// transaction that rolled back (`rolledBack`) is recorded as an issue; `false` when the view
    /// rejected a batch (recorded too), and the run should stop.
    func step(expecting rows: [OracleRow], events: [LiveQueryEvent<ID>], rolledBack: Bool, context: String) -> Bool {
        expect(rows)
        do {
            try apply(events) { _ in
                if rolledBack { Issue.record("a rolled-back transaction produced a change, \(context)") }
            }
            return true
        } catch {
            Issue.record("\(error), \(context)")
            return false
        }
    }

    /// Whether the view shows exactly the expected rows, in their sections and order, with no
    /// stale cell and no rule broken; each difference is recorded as an issue.
    func check(_ context: String) -> Bool {
        let shown = view.shownRows(dataSource).map { ($0.section, $0.id) }
        let wanted = expected.compactMap { row in ID(identityValue: row.identity).map { (row.section, $0.identityValue) } }
        let same = shown.count == wanted.count && zip(shown, wanted).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        #expect(same, "the view differs from a fresh query, \(context)\nshown \(shown.map { "\($0.0)/\($0.1)" })\nwanted \(wanted.map { "\($0.0)/\($0.1)" })")
        let stale = view.staleCells()
        #expect(stale.isEmpty, "stale cells \(stale), \(context)")
        #expect(view.violations.isEmpty && view.warnings.isEmpty, "\(view.violations) \(view.warnings), \(context)")
        return same && stale.isEmpty
    }
}
