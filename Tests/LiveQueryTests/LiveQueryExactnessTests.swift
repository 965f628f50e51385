import Foundation
import GRDB
import ListDiff
import ListTesting
import OwnThread
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// One test per way a live list used to differ from SQLite (issue #10), each against a fresh
/// SELECT.
@MainActor
struct LiveQueryExactnessTests {
    static func makeQueue() throws -> (DatabaseQueue, String) {
        let path = try TestDatabase.path()
        let queue = try DatabaseQueue(path: path, configuration: TestDatabase.patient)
        try queue.write { db in try db.execute(sql: TestDatabase.schema) }
        return (queue, path)
    }

    /// Opens `request` with synchronous delivery into a log.
    static func open<ID>(_ request: LiveQueryRequest<ID>, _ writer: any DatabaseWriter, refetchThreshold: Int = 1_000)
        async throws -> (LiveQuery<ID>, EventLog<ID>)
    {
        let log = EventLog<ID>()
        let query = try await LiveQuery<ID>.open(request, in: writer, options: .init(refetchThreshold: refetchThreshold, dataVersionPollInterval: nil),
                                                 callbackQueue: nil, onEvent: { log.append($0) })
        return (query, log)
    }

    static func ids(_ result: LiveResult<Int64>) -> [Int64] { result.rows(in: 0..<result.count).map(\.id) }

    static let byName = LiveQueryRequest(table: "item", sort: [SortTerm("name")], version: "version")

    static func fresh(_ writer: any DatabaseWriter, _ sql: String = "SELECT id FROM item ORDER BY name, id") throws -> [Int64] {
        try writer.read { db in try Int64.fetchAll(db, sql: sql) }
    }

    @Test("canonically equivalent section keys are different sections, and deleting one never breaks the result")
    func canonicallyEquivalentSections() async throws {
        let (queue, _) = try Self.makeQueue()
        let request = LiveQueryRequest(table: "item", sort: [SortTerm("grp")], section: "grp", version: "version")
        let (query, log) = try await Self.open(request, queue)
        let dataSource = SnapshotDataSource(query.initialResult.snapshot())
        let view = HeadlessListView(dataSource: dataSource)
        view.layoutIfNeeded()
        for sql in ["INSERT INTO item(id, grp) VALUES (1, 'Zo' || char(235))",          // NFC
                    "INSERT INTO item(id, grp) VALUES (2, 'Zoe' || char(776))",          // NFD
                    "INSERT INTO item(id, grp) VALUES (3, 'Zof')",
                    "DELETE FROM item WHERE id = 2"] {
            try await queue.write { db in try db.execute(sql: sql) }
            for update in log.updates { try view.apply(update.changeset, to: dataSource) }
            let result = query.latestResult
            let sectionRows = (0..<result.sectionCount).map { result.itemCount(inSection: $0) }
            #expect(sectionRows.reduce(0, +) == result.count, "after \(sql)")
            #expect(result.snapshot().itemCount == result.count)
            let expectedSections = try await queue.read { db in try Int.fetchOne(db, sql: "SELECT count(DISTINCT grp) FROM item") } ?? 0
            #expect(result.sectionCount == expectedSections, "after \(sql)")
            #expect(view.staleCells().isEmpty && view.violations.isEmpty)
        }
        #expect(query.latestResult.sectionCount == 2)
    }

    @Test("an UPDATE that changes the rowid leaves no phantom row")
    func rowidChange() async throws {
        let (queue, _) = try Self.makeQueue()
        try await queue.write { db in try db.execute(sql: "INSERT INTO item(id, name) VALUES (1, 'a'), (2, 'b'), (3, 'c')") }
        let (query, log) = try await Self.open(Self.byName, queue)
        try await queue.write { db in try db.execute(sql: "UPDATE item SET id = 9 WHERE id = 2") }
        #expect(log.updates.count == 1)
        #expect(Self.ids(query.latestResult) == [1, 9, 3])
        #expect(Self.ids(query.latestResult) == (try Self.fresh(queue)))
    }

    @Test("rows deleted by REPLACE leave the list, in every spelling", arguments: [
        "INSERT OR REPLACE INTO item(id, name, code) VALUES (10, 'z', 'c1')",
        "REPLACE INTO item(id, name, code) VALUES (11, 'y', 'c2')",
        "UPDATE OR REPLACE item SET code = 'c1' WHERE id = 2",
        "INSERT OR REPLACE INTO item(id, name) VALUES (1, 'renamed')",
        "INSERT INTO item(name, code) VALUES ('x', 'c1') ON CONFLICT(code) DO UPDATE SET name = excluded.name",
    ])
    func replaceDeletions(sql: String) async throws {
        let (queue, _) = try Self.makeQueue()
        try await queue.write { db in try db.execute(sql: "INSERT INTO item(id, name, code) VALUES (1, 'a', 'c1'), (2, 'b', 'c2'), (3, 'c', 'c3')") }
        let (query, log) = try await Self.open(Self.byName, queue)
        try await queue.write { db in try db.execute(sql: sql) }
        #expect(log.updates.allSatisfy { $0.path == .incremental })
        #expect(Self.ids(query.latestResult) == (try Self.fresh(queue)), "\(sql)")
    }

    @Test("a partial unique index whose schema ends in a -- comment: the query opens, and rows a REPLACE deletes through it leave the list")
    func partialIndexWithTrailingComment() async throws {
        let (queue, _) = try Self.makeQueue()
        try await queue.write { db in
            // No newline after the comment: SQLite keeps it, last, in the index's SQL.
            try db.execute(sql: "CREATE UNIQUE INDEX item_grp ON item(grp) WHERE flag = 1 -- one flagged row per group")
            try db.execute(sql: "INSERT INTO item(id, name, grp, flag) VALUES (1, 'a', 'x', 1), (2, 'b', 'x', 0), (3, 'c', 'y', 1)")
        }
        let (query, log) = try await Self.open(Self.byName, queue)
        try await queue.write { db in try db.execute(sql: "INSERT OR REPLACE INTO item(id, name, grp, flag) VALUES (4, 'd', 'x', 1)") }
        #expect(log.updates.allSatisfy { $0.path == .incremental })
        #expect(Self.ids(query.latestResult) == [2, 3, 4])
        #expect(Self.ids(query.latestResult) == (try Self.fresh(queue)))
    }

    @Test("triggers, foreign-key cascades and DELETE without WHERE are followed", arguments: [
        "INSERT INTO enabled_group VALUES ('c')",
        "DELETE FROM owner WHERE id = 1",
        "UPDATE owner SET id = 7 WHERE id = 2",
        "DELETE FROM item",
    ])
    func indirectWrites(sql: String) async throws {
        let (queue, _) = try Self.makeQueue()
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO item(id, name, grp, owner_id) VALUES (1, 'a', 'c', 1), (2, 'b', 'c', 2), (3, 'c', 'a', 3)")
        }
        // No version column: a cascade that changes owner_id changes the content.
        let request = LiveQueryRequest(table: "item", sort: [SortTerm("name")])
        let (query, log) = try await Self.open(request, queue)
        let dataSource = SnapshotDataSource(query.initialResult.snapshot())
        let view = HeadlessListView(dataSource: dataSource)
        view.layoutIfNeeded()
        let before = try await queue.read { db in try String.fetchAll(db, sql: "SELECT quote(owner_id) || quote(note) FROM item ORDER BY name, id") }
        try await queue.write { db in try db.execute(sql: sql) }
        let updates = log.updates
        for update in updates { try view.apply(update.changeset, to: dataSource) }
        #expect(Self.ids(query.latestResult) == (try Self.fresh(queue)), "\(sql)")
        let after = try await queue.read { db in try String.fetchAll(db, sql: "SELECT quote(owner_id) || quote(note) FROM item ORDER BY name, id") }
        if before.count == after.count && before != after {
            #expect(updates.contains { !$0.changeset.changes.itemReloads.isEmpty }, "content changed without a reload: \(sql)")
        }
    }

    @Test("a filter that reads its own table, or calls random() or date('now'), refetches and says why", arguments: [
        ("score > (SELECT avg(score) FROM item)", RefetchReason.Shape.readsOwnTable("item")),
        ("EXISTS (SELECT 1 FROM item AS other WHERE other.grp = item.grp AND other.id <> item.id)", .readsOwnTable("item")),
        ("random() % 2 = 0 OR 1", .nondeterministicFunctions(["random"])),
        ("\"random\"() % 2 = 0 OR 1", .nondeterministicFunctions(["random"])),
        ("changes() >= 0 AND last_insert_rowid() >= 0", .nondeterministicFunctions(["changes", "last_insert_rowid"])),
        ("note < date('now')", .currentTime),
        ("note < CURRENT_TIMESTAMP", .currentTime),
        ("note < datetime(current_date, '+1 day')", .currentTime),
        ("note < date()", .currentTime),
        ("note < strftime('%Y-%m-%d')", .currentTime),
        ("score < unixepoch ( /* now */ )", .currentTime),
    ])
    func filtersThatDependOnMore(filter: String, reason: RefetchReason.Shape) async throws {
        let (queue, _) = try Self.makeQueue()
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO item(id, name, score, grp, note) VALUES (1, 'a', 1, 'x', 'n'), (2, 'b', 5, 'x', 'n'), (3, 'c', 9, 'y', 'n')")
        }
        let request = LiveQueryRequest(table: "item", filter: .init(filter), sort: [SortTerm("name")], version: "version")
        let (query, log) = try await Self.open(request, queue)
        guard case let .refetch(why) = query.mode else {
            Issue.record("\(filter) is maintained incrementally")
            return
        }
        guard case let .request(shapes) = why else {
            Issue.record("\(filter) refetches for another reason: \(why)")
            return
        }
        #expect(shapes == [reason], "\(why)")
        let sql = LiveQueryRequest(sql: "SELECT * FROM item WHERE \(filter) ORDER BY name", version: "version")
        #expect(try await LiveQuery.explain(sql, in: queue).path == .refetch(reason: .request([reason])), "SELECT … WHERE \(filter)")
        // Lowering one row's score moves others in or out of `score > avg(score)`.
        try await queue.write { db in try db.execute(sql: "UPDATE item SET score = -100, version = version + 1 WHERE id = 1") }
        for update in log.updates { #expect(update.path != .incremental) }
        if !filter.contains("random") {
            #expect(Self.ids(query.latestResult) == (try Self.fresh(queue, "SELECT id FROM item WHERE \(filter) ORDER BY name, id")))
        }
    }

    @Test("'now' passed by an argument — positional or named, in any case, as text or bytes — makes a date function read the clock; an argument that only contains it does not", arguments: [
        ("note < date(?)", ["now"] as StatementArguments, true),
        ("note < date(?)", ["NoW"], true),
        ("note < datetime(:when, '-1 day')", ["when": "now"], true),
        ("note < strftime('%Y-%m-%d', @at)", ["at": "NOW"], true),
        ("name <> ? AND note < date($at)", ["y"] + ["at": "now"], true),
        ("note < julianday(?2) AND score > ?1", [1, "now"], true),
        ("note < date(?)", [Data("now".utf8)], true),
        ("note < date(?)", ["snow"], false),
        ("note < date(?)", ["now "], false),
        ("note < date(?)", ["\"now\""], false),
        ("note < date(:when)", ["when": "2024-01-01"], false),
        ("note < date(:now)", ["now": "2024-01-01"], false),
        ("name = ?", ["now"], false),
        ("note < strftime('%Y', ?)", ["2024-01-01"], false),
        ("note < date(?, '+1 day') AND julianday(note) > ?", ["2024-01-01", 2460000], false),
    ] as [(String, StatementArguments, Bool)])
    func nowByArgument(filter: String, arguments: StatementArguments, readsClock: Bool) async throws {
        let (queue, _) = try Self.makeQueue()
        let expected: LiveUpdatePath = readsClock ? .refetch(reason: .request([.currentTime])) : .incremental
        let table = LiveQueryRequest(table: "item", filter: .init(filter, arguments: arguments), sort: [SortTerm("name")])
        #expect(try await LiveQuery.explain(table, in: queue).path == expected, "\(filter) \(arguments)")
        let sql = LiveQueryRequest(sql: "SELECT * FROM item WHERE \(filter) ORDER BY name", arguments: arguments)
        #expect(try await LiveQuery.explain(sql, in: queue).path == expected, "SELECT … WHERE \(filter) \(arguments)")
    }

    @Test("plain filters stay incremental")
    func plainFilterIsIncremental() async throws {
        let (queue, _) = try Self.makeQueue()
        let request = LiveQueryRequest(table: "item", filter: .init("abs(score) > ? AND name LIKE 'a%'", arguments: [1]), sort: [SortTerm("name")])
        let (query, _) = try await Self.open(request, queue)
        #expect(query.mode == .incremental)
    }

    @Test("embedded NUL bytes and invalid UTF-8 (written by another program) sort, group and compare as SQLite does")
    func bytesAsStored() async throws {
        let (queue, path) = try Self.makeQueue()
        try await queue.write { db in
            try db.execute(sql: """
                INSERT INTO item(id, name, grp) VALUES
                (1, 'a', 'g'), (2, 'a' || char(0) || 'b', 'g'), (3, 'a' || char(0), 'g'), (4, 'ab', 'g'), (5, '', 'g')
                """)
        }
        let request = LiveQueryRequest(table: "item", sort: [SortTerm("name", collation: .binary)], section: "name")
        let (query, log) = try await Self.open(request, queue)
        #expect(Self.ids(query.initialResult) == (try Self.fresh(queue, "SELECT id FROM item ORDER BY name COLLATE BINARY, id")))
        #expect(query.initialResult.sectionCount == 5)
        // Another program writes bytes that are not UTF-8; two different byte strings must stay two rows.
        let sqlite3 = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3"].first { FileManager.default.isExecutableFile(atPath: $0) }
        // One transaction: three autocommit statements could be seen as two commits by the file watch.
        let writes = "BEGIN; INSERT INTO item(id, name) VALUES (6, CAST(X'FF41' AS TEXT)); INSERT INTO item(id, name) VALUES (7, CAST(X'FF42' AS TEXT)); INSERT INTO item(id, name) VALUES (8, CAST(X'C3' AS TEXT)); COMMIT;"
        if let sqlite3 {
            // The query's connection may hold the file for a moment (a busy machine): wait for it,
            // on a thread of its own.
            let status = try await onOwnThread {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: sqlite3)
                process.arguments = ["-cmd", ".timeout 10000", path, writes]
                try process.run()
                process.waitUntilExit()
                return process.terminationStatus
            }
            #expect(status == 0)
        } else {
            try await DatabaseQueue(path: path, configuration: TestDatabase.patient).write { db in try db.execute(sql: writes) }
        }
        try await query.checkForExternalChanges()
        #expect(log.updates.count == 1)
        let result = query.latestResult
        #expect(Self.ids(result) == (try Self.fresh(queue, "SELECT id FROM item ORDER BY name COLLATE BINARY, id")))
        #expect(result.sectionCount == 8)
        #expect(Set(Self.ids(result)).count == result.count)
    }

    @Test("without a version column, a content change reaches the list on both paths; so does 'abc' → 'ABC' under NOCASE", arguments: [false, true])
    func contentChangesOnBothPaths(external: Bool) async throws {
        let (queue, path) = try Self.makeQueue()
        try await queue.write { db in try db.execute(sql: "INSERT INTO item(id, name, note) VALUES (1, 'abc', 'x'), (2, 'b', 'y')") }
        for (request, sql) in [
            (LiveQueryRequest(table: "item", sort: [SortTerm("name")]), "UPDATE item SET note = 'changed' WHERE id = 1"),
            (LiveQueryRequest(table: "item", sort: [SortTerm("name")], version: "version"), "UPDATE item SET name = 'ABC' WHERE id = 1"),
        ] {
            let (query, log) = try await Self.open(request, queue)
            if external {
                try await DatabaseQueue(path: path, configuration: TestDatabase.patient).write { db in try db.execute(sql: sql) }
                try await query.checkForExternalChanges()
            } else {
                try await queue.write { db in try db.execute(sql: sql) }
            }
            let updates = log.updates
            #expect(updates.count == 1, "\(sql)")
            #expect(updates.first?.changeset.changes.itemReloads == [ItemPath(section: 0, item: 0)], "\(sql), external: \(external)")
            #expect(updates.first?.path == (external ? .refetch(reason: .anotherConnection(.noChangeLog)) : .incremental))
            query.cancel()
        }
    }

    @Test("a database file replaced at its path is a terminal, typed error; a removed one too", arguments: [true, false])
    func replacedDatabase(recreate: Bool) async throws {
        let (queue, path) = try Self.makeQueue()
        try await queue.write { db in try db.execute(sql: "INSERT INTO item(id, name) VALUES (1, 'a')") }
        let query = try await LiveQuery<Int64>.open(Self.byName, in: queue, options: .init(dataVersionPollInterval: .milliseconds(20)))
        let events = query.events
        try FileManager.default.removeItem(atPath: path)
        if recreate {
            let replacement = try DatabaseQueue(path: path)
            try await replacement.write { db in try db.execute(sql: TestDatabase.schema + "; INSERT INTO item(id, name) VALUES (5, 'other')") }
        }
        let event = try await nextEvent(events)
        guard case let .failure(error) = event else {
            Issue.record("expected a failure, got \(event)")
            return
        }
        // A file removed then created again may be seen in between, as removed: terminal either way.
        switch (error, recreate) {
        case (.databaseReplaced(path), true), (.databaseGone, _): #expect(error.isTerminal)
        default: Issue.record("unexpected \(error)")
        }
        // Terminal: the stream ends; the last good result stays in the app's hands.
        try await withTimeLimit {
            for await _ in events {}
        }
        #expect(query.latestResult.count == 1)
    }

    @Test("a busy database is retried: it opens once the lock goes within the retries, and fails without retries")
    func busyRetries() async throws {
        let (_, path) = try Self.makeQueue()
        var blockerConfiguration = Configuration()
        blockerConfiguration.allowsUnsafeTransactions = true   // holds the lock across accesses
        let blocker = try DatabaseQueue(path: path, configuration: blockerConfiguration)
        var configuration = Configuration()
        configuration.busyMode = .immediateError
        let queue = try DatabaseQueue(path: path, configuration: configuration)

        // Locked throughout: every retry fails, and the retries took their pauses.
        try await blocker.writeWithoutTransaction { db in try db.execute(sql: "BEGIN EXCLUSIVE") }
        let clock = ContinuousClock()
        let start = clock.now
        await #expect(throws: LiveQueryError.self) { _ = try await LiveQuery<Int64>.open(Self.byName, in: queue, options: .init(busyRetries: 2)) }
        #expect(start.duration(to: clock.now) >= .milliseconds(120))   // 40 + 80 ms of pauses

        // Without retries, the same lock fails at once.
        do {
            _ = try await LiveQuery<Int64>.open(Self.byName, in: queue, options: .init(busyRetries: 0))
            Issue.record("expected databaseBusy")
        } catch {
            guard case .databaseBusy = error else { throw error }
        }
        // The lock goes after 100 ms: with retries (40, 80, 160 ms… up to 2.5 s in all, room for a
        // loaded machine or ThreadSanitizer) the open succeeds.
        let release = Task {
            try await Task.sleep(for: .milliseconds(100))
            try await blocker.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
        }
        let query = try await LiveQuery<Int64>.open(Self.byName, in: queue, options: .init(busyRetries: 6))
        try await release.value
        #expect(query.initialResult.count == 0)
    }

    @Test("nothing is delivered to the callback after cancel(), even what was already queued")
    func noDeliveryAfterCancel() async throws {
        let (queue, _) = try Self.makeQueue()
        let callbackQueue = DispatchQueue(label: "held")
        let received = EventLog<Int64>()
        let query = try await LiveQuery<Int64>.open(Self.byName, in: queue, options: .init(dataVersionPollInterval: nil),
                                                    callbackQueue: callbackQueue, onEvent: { received.append($0) })
        callbackQueue.suspend()
        try await queue.write { db in try db.execute(sql: "INSERT INTO item(id, name) VALUES (1, 'a')") }
        query.cancel()
        callbackQueue.resume()
        try await withTimeLimit { await withCheckedContinuation { continuation in callbackQueue.async { continuation.resume() } } }
        #expect(received.drain().isEmpty)
    }

    @Test("a statement that is prepared but never run does not make the next commit refetch")
    func preparedStatementHasNoEffect() async throws {
        let (queue, _) = try Self.makeQueue()
        try await queue.write { db in try db.execute(sql: "INSERT INTO item(id, name, score) VALUES (1, 'a', 1), (2, 'b', 2)") }
        // A refetch-mode query: any real change to item refetches.
        let request = LiveQueryRequest(table: "item", filter: .init("score >= (SELECT avg(score) FROM item)"), sort: [SortTerm("name")])
        let (query, _) = try await Self.open(request, queue)
        try await queue.write { db in
            _ = try db.makeStatement(sql: "DELETE FROM item")   // compiled, never stepped
            try db.execute(sql: "INSERT INTO owner(id, label) VALUES (9, 'nine')")
        }
        #expect(query.statistics.refetches == 0)
        try await queue.write { db in try db.execute(sql: "UPDATE item SET score = 3 WHERE id = 1") }
        #expect(query.statistics.refetches == 1)
    }

    @Test("errors carry the SQL and its arguments")
    func errorsCarrySQL() async throws {
        let (queue, _) = try Self.makeQueue()
        do {
            _ = try await Self.open(LiveQueryRequest(table: "item", filter: .init("score > ? AND nope = ?", arguments: [1, "x"]), sort: [SortTerm("name")]), queue)
            Issue.record("expected an error")
        } catch let error as LiveQueryError {
            guard case .invalidSQL = error, let databaseError = error.databaseError else { throw error }
            #expect(databaseError.sql?.contains("nope = ?") == true && databaseError.arguments == [1, "x"]
                && databaseError.message?.contains("nope") == true && databaseError.resultCode == .SQLITE_ERROR)
            #expect(error.description.contains("\"x\""), "\(error)")
        }
    }

    @Test("a WITHOUT ROWID table with a TEXT key: identities are its text; asking for integers fails at open, naming TEXT and the type to declare")
    func withoutRowidTextKey() async throws {
        let (queue, _) = try Self.makeQueue()
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE tag(key TEXT PRIMARY KEY, label TEXT) WITHOUT ROWID; INSERT INTO tag VALUES ('k2', 'a'), ('k1', 'b')")
        }
        let (query, log) = try await Self.open(LiveQueryRequest(table: "tag", identity: nil, as: String.self, sort: [SortTerm("label")]), queue)
        #expect(query.initialResult.rows(in: 0..<2).map(\.id) == ["k2", "k1"])
        try await queue.write { db in try db.execute(sql: "UPDATE tag SET label = 'c' WHERE key = 'k2'") }
        #expect(log.updates.first.map { $0.result.rows(in: 0..<2).map(\.id) } == ["k1", "k2"])
        do {
            _ = try await Self.open(LiveQueryRequest(table: "tag", sort: [SortTerm("label")]), queue)
            Issue.record("expected an identity type mismatch")
        } catch let error as LiveQueryError {
            guard case let .invalidRequest(.identityTypeMismatch(_, found, examples, declared)) = error else { throw error }
            #expect(found == .text && declared == "Int64" && examples.count == 2)
            #expect(error.description.contains("as: String.self"), "\(error)")
        }
    }

    @Test("an identity column without a UNIQUE constraint is refused up front")
    func identityMustBeUnique() async throws {
        let (queue, _) = try Self.makeQueue()
        do {
            _ = try await Self.open(LiveQueryRequest(table: "item", identity: "name", as: String.self, sort: [SortTerm("name")]), queue)
            Issue.record("expected an error")
        } catch let error as LiveQueryError {
            guard case .invalidRequest(.identityNotUnique(identity: "name", table: "item")) = error else { throw error }
            #expect(error.description.contains("UNIQUE"), "\(error)")
        }
    }
}
