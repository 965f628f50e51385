import Foundation
import GRDB
import ListDiff
import ListPresenter
import ListTesting
import LiveQuery

struct TimeLimitExceeded: Error, CustomStringConvertible {
    var what: String
    var seconds: Double
    var description: String { "\(what): not within \(seconds) s" }
}

/// Lets the main actor run (record loads land through it) until `condition` holds, for at most
/// `seconds`: a behaviour that never comes fails the test instead of hanging it. The limit guards
/// against a hang, it measures nothing: the main actor is shared with every other main-actor
/// suite running in parallel, so it is generous.
@MainActor
func eventually(_ what: String, seconds: Double = 30, _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        guard ContinuousClock.now < deadline else { throw TimeLimitExceeded(what: what, seconds: seconds) }
        try await Task.sleep(for: .milliseconds(2))
    }
}

/// A cell as a test reads it: the record's text, a placeholder, or a state row.
enum Shown: Equatable, CustomStringConvertible {
    case record(String)
    case placeholder(failed: Bool)
    case state(StateBlock<SQLValue>.Kind)

    var description: String {
        switch self {
        case let .record(text): text
        case let .placeholder(failed): failed ? "failed placeholder" : "placeholder"
        case let .state(kind): "state \(kind)"
        }
    }
}

/// A row of the test table, decoded by the row cache.
struct ItemRecord: FetchableRecord, Sendable, Equatable {
    var id: Int64
    var name: String

    init(row: Row) throws {
        id = row["id"]
        name = row["name"]
    }
}

typealias LiveCells = CellContent<LiveSection, LiveRow<Int64>, ItemRecord>
typealias LiveView = HeadlessListView<LiveCells, SectionHeaderContent<LiveSection>>

@MainActor
extension HeadlessListView where Cell == LiveCells {
    /// What the visible cells show.
    var shown: [Shown] {
        visibleItems.compactMap { path in
            switch cellContent(at: path) {
            case let .record(_, record)?: .record(record.name)
            case let .placeholder(_, state)?: .placeholder(failed: state.isFailed)
            case let .state(block)?: .state(block.kind)
            case nil: nil
            }
        }
    }
}

enum TestDatabase {
    /// A database pool on a fresh file in a temporary directory, with `rows` items named
    /// `name0000`, `name0001`…
    static func pool(rows: Int) throws -> DatabasePool {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livequeryui-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let pool = try DatabasePool(path: directory.appendingPathComponent("test.sqlite").path, configuration: configuration)
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0)")
            let statement = try db.makeStatement(sql: "INSERT INTO item(name) VALUES (?)")
            for index in 0..<rows { try statement.execute(arguments: [String(format: "name%04d", index)]) }
        }
        return pool
    }

    static let byName = LiveQueryRequest<Int64>(table: "item", sort: [SortTerm("name")], version: "version")

    /// The rows in the query's order, read fresh.
    static func rows(_ pool: DatabasePool) throws -> [ItemRecord] {
        try pool.read { db in try ItemRecord.fetchAll(db, sql: "SELECT id, name FROM item ORDER BY name, id") }
    }
}
