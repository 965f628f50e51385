import Foundation
import GRDB
import ListDiff
import ListTesting
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

@MainActor
struct LiveQueryBehaviourTests {
    static func makeQueue(rows: Int = 20) throws -> (DatabaseQueue, String) {
        let path = try TestDatabase.path()
        let queue = try DatabaseQueue(path: path, configuration: TestDatabase.patient)
        try queue.write { db in
            try db.execute(sql: TestDatabase.schema)
            for index in 0..<rows {
                try db.execute(sql: "INSERT INTO item(name, score, grp) VALUES (?, ?, 'a')", arguments: ["row\(index)", index])
            }
        }
        return (queue, path)
    }

    static let byScore = LiveQueryRequest<Int64>(table: "item", sort: [SortTerm("score")], version: "version")

    static func ids(_ result: LiveResult<Int64>) -> [Int64] { result.rows(in: 0..<result.count).map(\.id) }

    @Test("a commit by another connection is picked up through PRAGMA data_version")
    func otherConnection() async throws {
        let (queue, path) = try Self.makeQueue()
        let log = EventLog<Int64>()
        let query = try await LiveQuery<Int64>.open(Self.byScore, in: queue, options: .init(dataVersionPollInterval: nil, watchesFiles: false),
                                                    callbackQueue: nil, onEvent: { log.append($0) })
        let other = try DatabaseQueue(path: path, configuration: TestDatabase.patient)
        try await other.write { db in try db.execute(sql: "UPDATE item SET score = -1 WHERE id = 5") }
        #expect(log.drain().isEmpty)   // no event: GRDB does not see another connection's writes (and the file watcher is off)
        try await query.checkForExternalChanges()
        let events = log.drain()
        guard case let .update(update)? = events.first else {
            Issue.record("no update after an external commit: \(events)")
            return
        }
        #expect(update.path == .refetch(reason: .anotherConnection(.noChangeLog)))
        #expect(Self.ids(update.result).first == 5)
        #expect(update.changeset.changes.itemMoves.count == 1)
    }

    @Test("the poller finds another process's commit without being asked")
    func pollerFindsExternalCommit() async throws {
        let (queue, path) = try Self.makeQueue()
        let query = try await LiveQuery<Int64>.open(Self.byScore, in: queue, options: .init(dataVersionPollInterval: .milliseconds(20)))
        let events = query.events   // a subscription starts with the current result
        let other = try DatabaseQueue(path: path, configuration: TestDatabase.patient)
        try await other.write { db in try db.execute(sql: "DELETE FROM item WHERE id = 3") }
        guard case let .update(update) = try await nextEvent(events) else {
            Issue.record("expected an update")
            return
        }
        #expect(!Self.ids(update.result).contains(3))
        query.cancel()
    }

    @Test("changing the filter and sort is one changeset from the displayed result to the new one")
    func criteriaChange() async throws {
        let (queue, _) = try Self.makeQueue()
        let log = EventLog<Int64>()
        let query = try await LiveQuery<Int64>.open(Self.byScore, in: queue, options: .init(dataVersionPollInterval: nil), callbackQueue: nil, onEvent: { log.append($0) })
        let dataSource = SnapshotDataSource(query.initialResult.snapshot())
        let view = HeadlessListView(dataSource: dataSource)
        view.layoutIfNeeded()
        try await query.setRequest(LiveQueryRequest<Int64>(table: "item", filter: .init("score % 2 = 0"), sort: [SortTerm("score", .descending)], version: "version"))
        let events = log.drain()
        #expect(events.count == 1)
        guard case let .update(update)? = events.first else { return }
        try view.apply(update.changeset, to: dataSource)
        #expect(dataSource.snapshot.sections[0].items.map(\.id) == [19, 17, 15, 13, 11, 9, 7, 5, 3, 1])
        #expect(view.staleCells().isEmpty)
        // The new criteria are followed incrementally from then on.
        try await queue.write { db in try db.execute(sql: "UPDATE item SET score = 100 WHERE id = 1") }
        guard case let .update(next)? = log.drain().first else {
            Issue.record("no update after the criteria change")
            return
        }
        #expect(next.path == .incremental)
        #expect(Self.ids(next.result).first == 1)
    }

    @Test("an UPDATE of a column the query does not read produces nothing (with a version column)")
    func unreadColumnIgnored() async throws {
        let (queue, _) = try Self.makeQueue()
        let log = EventLog<Int64>()
        let query = try await LiveQuery<Int64>.open(Self.byScore, in: queue, options: .init(dataVersionPollInterval: nil), callbackQueue: nil, onEvent: { log.append($0) })
        defer { withExtendedLifetime(query) {} }
        try await queue.write { db in try db.execute(sql: "UPDATE item SET note = 'changed'") }
        #expect(log.drain().isEmpty)
        try await queue.write { db in try db.execute(sql: "UPDATE item SET version = version + 1 WHERE id = 2") }
        guard case let .update(update)? = log.drain().first else {
            Issue.record("a version bump must reload")
            return
        }
        #expect(update.changeset.changes.itemReloads == [ItemPath(section: 0, item: 1)])
    }

    @Test("bad requests throw a typed error before anything is observed", arguments: [
        (LiveQueryRequest<Int64>(table: "nope", sort: [SortTerm("x")]), "no such table", { @Sendable (error: LiveQueryError) in
            if case .unknownTable("nope") = error { true } else { false }
        }),
        (LiveQueryRequest<Int64>(table: "item", sort: [SortTerm("missing")]), "no such sort column", { @Sendable (error: LiveQueryError) in
            if case .unknownColumn(table: "item", column: "missing") = error { true } else { false }
        }),
        (LiveQueryRequest<Int64>(table: "item", sort: [SortTerm("score")], version: "missing"), "no such version column", { @Sendable (error: LiveQueryError) in
            if case .unknownColumn(table: "item", column: "missing") = error { true } else { false }
        }),
        (LiveQueryRequest<Int64>(table: "item", filter: .init("score >>> 1"), sort: [SortTerm("score")]), "a syntax error", { @Sendable (error: LiveQueryError) in
            if case .invalidSQL = error, let databaseError = error.databaseError { databaseError.resultCode == .SQLITE_ERROR } else { false }
        }),
        (LiveQueryRequest<Int64>(table: "item", filter: .init("nosuchcolumn = 1"), sort: [SortTerm("score")]), "no such filter column", { @Sendable (error: LiveQueryError) in
            if case .invalidSQL = error, let databaseError = error.databaseError { databaseError.message?.contains("nosuchcolumn") == true } else { false }
        }),
        (LiveQueryRequest<Int64>(table: "item", filter: .init("score = ?"), sort: [SortTerm("score")]), "a missing argument", { @Sendable (error: LiveQueryError) in
            if case .invalidSQL = error, let databaseError = error.databaseError { databaseError.resultCode == .SQLITE_MISUSE } else { false }
        }),
        (LiveQueryRequest<Int64>(table: "item", sort: [SortTerm("score"), SortTerm("grp")], section: "grp"), "a section after the first term", { @Sendable (error: LiveQueryError) in
            if case .invalidRequest(.sectionNotFirstSortTerm(section: "grp", firstTerm: "score")) = error { true } else { false }
        }),
    ])
    func badRequests(request: LiveQueryRequest<Int64>, what: String, matches: @Sendable (LiveQueryError) -> Bool) async throws {
        let (queue, _) = try Self.makeQueue()
        do {
            _ = try await LiveQuery<Int64>.open(request, in: queue)
            Issue.record("expected an error for \(what)")
        } catch {
            #expect(matches(error), "\(what): \(error)")
        }
    }

    @Test("a WITHOUT ROWID table with an integer primary key is followed by refetching")
    func withoutRowID() async throws {
        let queue = try DatabaseQueue(path: try TestDatabase.path())
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE tag(id INTEGER PRIMARY KEY, label TEXT) WITHOUT ROWID; INSERT INTO tag VALUES (1, 'b'), (2, 'a')")
        }
        let log = EventLog<Int64>()
        let query = try await LiveQuery<Int64>.open(LiveQueryRequest<Int64>(table: "tag", sort: [SortTerm("label")]), in: queue,
                                             options: .init(dataVersionPollInterval: nil), callbackQueue: nil, onEvent: { log.append($0) })
        #expect(query.mode == .refetch(reason: .request([.withoutRowid("tag")])))
        #expect(Self.ids(query.initialResult) == [2, 1])
        try await queue.write { db in try db.execute(sql: "UPDATE tag SET label = 'c' WHERE id = 2") }
        guard case let .update(update)? = log.drain().first else {
            Issue.record("no update for a WITHOUT ROWID table")
            return
        }
        #expect(Self.ids(update.result) == [1, 2])
    }

    @Test("a busy database: open retries, then throws databaseBusy")
    func busyDatabase() async throws {
        let (_, path) = try Self.makeQueue()
        var configuration = Configuration()
        configuration.busyMode = .immediateError
        var blockerConfiguration = Configuration()
        blockerConfiguration.allowsUnsafeTransactions = true   // holds the lock across accesses
        let blocker = try DatabaseQueue(path: path, configuration: blockerConfiguration)
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try await blocker.writeWithoutTransaction { db in try db.execute(sql: "BEGIN EXCLUSIVE") }
        do {
            _ = try await LiveQuery<Int64>.open(Self.byScore, in: queue, options: .init(busyRetries: 2))
            Issue.record("expected databaseBusy")
        } catch {
            guard case .databaseBusy = error else {
                Issue.record("expected databaseBusy, got \(error)")
                return
            }
        }
        try await blocker.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
        _ = try await LiveQuery<Int64>.open(Self.byScore, in: queue)
    }

    @Test("releasing the query stops it: no more events, no observer left behind")
    func releaseStops() async throws {
        let (queue, _) = try Self.makeQueue()
        let log = EventLog<Int64>()
        var query: LiveQuery<Int64>? = try await LiveQuery<Int64>.open(Self.byScore, in: queue, options: .init(dataVersionPollInterval: nil), callbackQueue: nil, onEvent: { log.append($0) })
        try await queue.write { db in try db.execute(sql: "DELETE FROM item WHERE id = 1") }
        #expect(log.drain().count == 1)
        withExtendedLifetime(query) {}
        query = nil
        try await queue.write { db in try db.execute(sql: "DELETE FROM item WHERE id = 2") }
        #expect(log.drain().isEmpty)
    }

    @Test("a removed database file is reported, and the last result stays")
    func vanishedDatabase() async throws {
        let (queue, path) = try Self.makeQueue()
        let query = try await LiveQuery<Int64>.open(Self.byScore, in: queue, options: .init(dataVersionPollInterval: .milliseconds(20)))
        let events = query.events
        try FileManager.default.removeItem(atPath: path)
        guard case let .failure(error) = try await nextEvent(events) else {
            Issue.record("expected a failure")
            return
        }
        guard case .databaseGone = error else {
            Issue.record("expected databaseGone, got \(error)")
            return
        }
        #expect(query.latestResult.count == 20)
        query.cancel()
    }

    @Test("a schema change under the query is a failure event; nothing crashes")
    func schemaChanged() async throws {
        let (queue, _) = try Self.makeQueue()
        let log = EventLog<Int64>()
        let query = try await LiveQuery<Int64>.open(LiveQueryRequest<Int64>(table: "item", filter: .init("note IS NULL"), sort: [SortTerm("score")]), in: queue,
                                             options: .init(dataVersionPollInterval: nil), callbackQueue: nil, onEvent: { log.append($0) })
        defer { withExtendedLifetime(query) {} }
        try await queue.write { db in
            try db.execute(sql: "ALTER TABLE item RENAME COLUMN note TO remark")
            try db.execute(sql: "UPDATE item SET score = 50 WHERE id = 1")
        }
        let events = log.drain()
        guard case let .failure(error)? = events.first else {
            Issue.record("expected a failure, got \(events)")
            return
        }
        guard case .schemaChanged = error else {
            Issue.record("expected schemaChanged, got \(error)")
            return
        }
    }

    @Test("changed rows are re-read by rowid, not by scanning an index that serves the filter")
    func rereadUsesRowidLookup() throws {
        let queue = try DatabaseQueue(path: try TestDatabase.path())
        let plans = try queue.write { db -> [String] in
            try db.execute(sql: TestDatabase.schema)
            try db.execute(sql: "CREATE INDEX item_flag_score ON item(flag, score)")
            let plan = try QueryPlan(LiveQueryRequest<Int64>(table: "item", filter: .init("flag = ?", arguments: [1]), sort: [SortTerm("score")]), db)
            let sql = "EXPLAIN QUERY PLAN " + plan.rereadPrefixSQL + "?, ?)"
            return try Row.fetchAll(db, sql: sql, arguments: [1, 2, 3]).map { $0["detail"] as String }
        }
        #expect(plans.contains { $0.contains("INTEGER PRIMARY KEY") || $0.contains("rowid") }, "\(plans)")
        #expect(!plans.contains { $0.contains("item_flag_score") }, "\(plans)")
    }

    @Test("huge values, NULLs and mixed storage classes in the sort column are ordered as SQLite orders them")
    func extremeValues() async throws {
        let queue = try DatabaseQueue(path: try TestDatabase.path())
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE v(x)")
            let values: [DatabaseValue] = [.null, Int64.max.databaseValue, Int64.min.databaseValue, 1e308.databaseValue,
                                           (-1e308).databaseValue, "text".databaseValue, Data([0xFF]).databaseValue,
                                           String(repeating: "z", count: 100_000).databaseValue, 9_007_199_254_740_993.databaseValue,
                                           9_007_199_254_740_992.0.databaseValue]
            for value in values { try db.execute(sql: "INSERT INTO v(x) VALUES (?)", arguments: [value]) }
        }
        let query = try await LiveQuery<Int64>.open(LiveQueryRequest<Int64>(table: "v", sort: [SortTerm("x", .descending)]), in: queue)
        let expected = try await queue.read { db in try Int64.fetchAll(db, sql: "SELECT rowid FROM v ORDER BY x DESC, rowid") }
        #expect(Self.ids(query.initialResult) == expected)
    }
}
