import Foundation
import GRDB
import ListDiff
import ListTesting
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// A query opens with its first screen and indexes the rest off the caller's path; commits that
/// land meanwhile are not lost, and the list grows below what it shows, without a jump.
@MainActor
struct FirstScreenTests {
    static func makeDatabase(rows: Int, pool: Bool) throws -> any DatabaseWriter {
        let path = try TestDatabase.path()
        let writer: any DatabaseWriter = pool ? try DatabasePool(path: path) : try DatabaseQueue(path: path)
        try writer.write { db in
            try db.execute(sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT NOT NULL, grp INTEGER NOT NULL, version INTEGER NOT NULL DEFAULT 0)")
            let statement = try db.makeStatement(sql: "INSERT INTO item(name, grp) VALUES (?, ?)")
            for index in 0..<rows { try statement.execute(arguments: [String(format: "n%06d", (index * 7_919) % rows), index % 7]) }
        }
        return writer
    }

    nonisolated static let oracle = "SELECT id FROM item ORDER BY grp, name, id"

    @Test("the first screen, then the rest as one update that appends below it; commits meanwhile are applied", arguments: [true, false])
    func firstScreenThenTheRest(pool: Bool) async throws {
        let writer = try Self.makeDatabase(rows: 20_000, pool: pool)
        let log = EventLog<Int64>()
        let request = LiveQueryRequest(table: "item", sort: [SortTerm("grp"), SortTerm("name")], section: "grp", version: "version")
        let query = try await LiveQuery.open(request, in: writer, options: .init(dataVersionPollInterval: nil, firstScreenRows: 100, wholeResultRows: 0),
                                             callbackQueue: nil, onEvent: { log.append($0) })
        let first = query.initialResult
        #expect(first.count == 100 && !first.isComplete)
        let fresh = try await writer.read { db in try Int64.fetchAll(db, sql: Self.oracle) }
        #expect(first.rows(in: 0..<100).map(\.id) == Array(fresh.prefix(100)))

        let dataSource = SnapshotDataSource(first.snapshot())
        let view = HeadlessListView(dataSource: dataSource)
        view.layoutIfNeeded()
        // A commit while the rest is indexed: it moves a row into the first screen.
        try await writer.write { db in try db.execute(sql: "UPDATE item SET grp = -1, version = version + 1 WHERE id = 15000") }
        let complete = await query.completeResult()
        #expect(complete.isComplete)
        let expected = try await writer.read { db in try Int64.fetchAll(db, sql: Self.oracle) }
        #expect(complete.rows(in: 0..<complete.count).map(\.id) == expected)
        var paths: [LiveUpdatePath] = []
        for update in log.updates {
            paths.append(update.path)
            try view.apply(update.changeset, to: dataSource)
        }
        #expect(paths.contains(.firstFetchCompleted), "\(paths)")
        #expect(dataSource.snapshot.sections.flatMap { $0.items.map(\.id) } == expected)
        #expect(view.staleCells().isEmpty)
        // From then on the query is incremental.
        try await writer.write { db in try db.execute(sql: "UPDATE item SET name = 'a', version = version + 1 WHERE id = 3") }
        #expect(log.updates.map(\.path) == [.incremental])
    }

    @Test("without commits meanwhile, the rest appends below the first screen: its rows never move")
    func restAppendsBelow() async throws {
        let writer = try Self.makeDatabase(rows: 5_000, pool: true)
        let log = EventLog<Int64>()
        let query = try await LiveQuery.open(LiveQueryRequest(table: "item", sort: [SortTerm("name")], version: "version"), in: writer,
                                             options: .init(dataVersionPollInterval: nil, firstScreenRows: 50, wholeResultRows: 0),
                                             callbackQueue: nil, onEvent: { log.append($0) })
        _ = await query.completeResult()
        // The complete result can be read a moment before its update reaches the callback.
        let update = try await withTimeLimit { () async throws -> LiveQueryUpdate<Int64> in
            while true {
                if let update = log.updates.first { return update }   // `updates` drains the log
                try await Task.sleep(for: .milliseconds(2))
            }
        }
        #expect(update.path == .firstFetchCompleted)
        let changes = update.changeset.changes
        #expect(changes.itemDeletes.isEmpty && changes.itemMoves.isEmpty && changes.itemReloads.isEmpty)
        #expect(changes.itemInserts.count == 4_950)
        #expect(changes.itemInserts.allSatisfy { $0.item >= 50 })
    }

    @Test("a small result opens complete")
    func smallResultIsComplete() async throws {
        let writer = try Self.makeDatabase(rows: 30, pool: false)
        let query = try await LiveQuery.open(LiveQueryRequest(table: "item", sort: [SortTerm("name")]), in: writer,
                                             options: .init(dataVersionPollInterval: nil, firstScreenRows: 100, wholeResultRows: 0))
        #expect(query.initialResult.isComplete && query.initialResult.count == 30)
    }
}
