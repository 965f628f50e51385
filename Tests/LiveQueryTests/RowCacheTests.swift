import Foundation
import GRDB
import ListDiff
import ListTesting
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// Counts the loader's calls and fails on demand.
final class LoaderProbe: @unchecked Sendable {
    private let lock = NSLock()
    private var calls: [[Int64]] = []
    private var failing: Set<Int64> = []

    func failWhenLoading(_ ids: Set<Int64>) { lock.withLock { failing = ids } }
    var loadedIDs: [[Int64]] { lock.withLock { calls } }
    func reset() { lock.withLock { calls = [] } }

    struct InjectedFailure: Error {}

    var loader: RowCache<Int64, String>.Loader {
        { [self] ids in
            try lock.withLock {
                if !failing.isDisjoint(with: ids) { throw InjectedFailure() }
                calls.append(ids)
            }
            return Dictionary(uniqueKeysWithValues: ids.map { ($0, "row \($0)") })
        }
    }
}

struct RowCacheTests {
    static func database(rows: Int) throws -> DatabaseQueue {
        let queue = try DatabaseQueue(path: try TestDatabase.path())
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT, version INTEGER NOT NULL DEFAULT 0)")
            let statement = try db.makeStatement(sql: "INSERT INTO item(name) VALUES (?)")
            for index in 0..<rows { try statement.execute(arguments: [String(format: "name%06d", index)]) }
        }
        return queue
    }

    static let byName = LiveQueryRequest<Int64>(table: "item", sort: [SortTerm("name")], version: "version")

    @Test("scrolling 100k rows down and back in windows of 40 serves every row with one query per page and a bounded cache")
    func scrollDownAndBack() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        let queue = try Self.database(rows: 100_000)
        let query = try await LiveQuery<Int64>.open(Self.byName, in: queue, options: .init(dataVersionPollInterval: nil))
        print("RowCacheTests.scrollDownAndBack: setup \(start.duration(to: clock.now))")
        let probe = LoaderProbe()
        let cache = RowCache(pageSize: 50, maximumPages: 20, loader: probe.loader)
        cache.update(result: await query.completeResult())
        let windows = Array(stride(from: 0, to: 100_000, by: 40))
        var maximumCached = 0
        func scroll(_ starts: [Int]) async {
            for start in starts {
                _ = cache.rows(in: start..<start + 40, prefetch: 40)
                await cache.waitForLoads()
                let slots = cache.rows(in: start..<start + 40)
                let placeholders = slots.filter { if case .placeholder = $0 { true } else { false } }
                #expect(placeholders.isEmpty, "window at \(start)")
                maximumCached = max(maximumCached, cache.cachedRowCount)
            }
        }
        await scroll(windows)
        // Down: each of the 2,000 pages loaded once, each row once — no duplicate load of a cached page.
        #expect(cache.statistics.pageQueries == 2_000)
        #expect(cache.statistics.rowsLoaded == 100_000)
        await scroll(windows.reversed())
        let statistics = cache.statistics
        // Back up: the cache holds at most 20 pages, so the rest load again — once each.
        #expect(statistics.pageQueries <= 4_000)
        #expect(probe.loadedIDs.flatMap { $0 }.count == statistics.rowsLoaded)
        #expect(maximumCached <= 20 * 50)
        #expect(statistics.evictions > 0)
        print("RowCacheTests.scrollDownAndBack: \(statistics)")
        withExtendedLifetime(query) {}
    }

    @Test("writes while scrolling: changed rows (version or shown sort value) reload, shifted rows keep their content, deleted rows leave their pages")
    func writesWhileScrolling() async throws {
        let queue = try Self.database(rows: 500)
        let log = EventLog<Int64>()
        let query = try await LiveQuery<Int64>.open(Self.byName, in: queue, options: .init(dataVersionPollInterval: nil), callbackQueue: nil, onEvent: { log.append($0) })
        let probe = LoaderProbe()
        let cache = RowCache(pageSize: 50, maximumPages: 20, loader: probe.loader)
        cache.update(result: await query.completeResult())
        _ = cache.rows(in: 0..<100)
        await cache.waitForLoads()
        probe.reset()

        try await queue.write { db in
            try db.execute(sql: "UPDATE item SET version = version + 1 WHERE id = 3")              // content change
            try db.execute(sql: "UPDATE item SET name = 'name000001x' WHERE id = 10")              // moves up to position 2
            try db.execute(sql: "DELETE FROM item WHERE id = 5")
        }
        for event in log.drain() { if case let .update(update) = event { cache.update(result: update.result) } }
        let before = cache.rows(in: 0..<100)
        let placeholders = before.compactMap { slot -> Int64? in if case let .placeholder(row) = slot { row.id } else { nil } }
        // Row 3 changed; row 10's name (a shown sort value) changed and moved it; row 101 slid into
        // the range when row 5 left. The rows that only shifted are still cached.
        #expect(placeholders == [10, 3, 101])
        await cache.waitForLoads()
        #expect(probe.loadedIDs.flatMap { $0 }.sorted() == [3, 10, 101])
        let after = cache.rows(in: 0..<100)
        #expect(!after.contains { if case let .loaded(row, _) = $0 { row.id == 5 } else { false } })
        #expect(after.allSatisfy { if case .loaded = $0 { true } else { false } })
        if case let .loaded(row, content) = after[2] { #expect(row.id == 10 && content == "row 10") }
        withExtendedLifetime(query) {}
    }

    @Test("a failed page reports failed with retry, other pages are unaffected, retry recovers")
    func failedPageRetries() async throws {
        let queue = try Self.database(rows: 300)
        let query = try await LiveQuery<Int64>.open(Self.byName, in: queue, options: .init(dataVersionPollInterval: nil))
        let probe = LoaderProbe()
        probe.failWhenLoading([60])        // a row of page 1
        let cache = RowCache(pageSize: 50, maximumPages: 20, loader: probe.loader)
        #expect(cache.listState.description == "loading")
        cache.update(result: await query.completeResult())
        _ = cache.rows(in: 0..<150)
        await cache.waitForLoads()
        guard case let .failed(failure) = cache.pageState(1) else {
            Issue.record("page 1 should have failed, is \(cache.pageState(1))")
            return
        }
        #expect(failure.error is LoaderProbe.InjectedFailure)
        #expect(cache.pageState(0).description == "loaded" && cache.pageState(2).description == "loaded")
        // A failed page is not reloaded behind the user's back…
        _ = cache.rows(in: 0..<150)
        await cache.waitForLoads()
        #expect(cache.statistics.failedQueries == 1)
        // …but its retry runs exactly that load again.
        probe.failWhenLoading([])
        failure.retry()
        await cache.waitForLoads()
        #expect(cache.pageState(1).description == "loaded")
        #expect(probe.loadedIDs.last?.count == 50)
        withExtendedLifetime(query) {}
    }

    /// A record whose `day` must be a date: a row with other text there does not decode.
    struct Dated: FetchableRecord, Sendable {
        var name: String
        var day: Date
        init(row: Row) throws {
            name = try row.decode(String.self, forColumn: "name")
            day = try row.decode(Date.self, forColumn: "day")
        }
    }

    @Test("a row that does not decode fails alone: the rest of its page shows, the row says why, and loads again once fixed")
    func undecodableRowFailsAlone() async throws {
        let queue = try DatabaseQueue(path: try TestDatabase.path())
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE event(id INTEGER PRIMARY KEY, name TEXT NOT NULL, day TEXT)")
            for index in 1...60 { try db.execute(sql: "INSERT INTO event VALUES (?, ?, '2026-11-27')", arguments: [index, String(format: "e%03d", index)]) }
            try db.execute(sql: "UPDATE event SET day = 'not a date' WHERE id = 7")
        }
        let query = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM event ORDER BY name"), in: queue,
                                             options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        let cache = RowCache<Int64, Dated>(query: query, reader: queue, pageSize: 50)
        cache.update(result: query.latestResult)
        _ = cache.rows(in: 0..<60)
        await cache.waitForLoads()
        let slots = cache.rows(in: 0..<60)
        let loaded = slots.filter { if case .loaded = $0 { true } else { false } }
        #expect(loaded.count == 59, "one row of 60 fails, not its page of 50")
        let failure = try #require(cache.rowFailure(atPosition: 6))
        #expect(failure.message.contains("day") || failure.message.contains("Date"), "\(failure.message)")
        #expect(cache.rowFailure(atPosition: 5) == nil)
        if case .loaded = cache.pageState(0) {} else { Issue.record("page 0 is \(cache.pageState(0))") }
        #expect(cache.statistics.failedRows == 1)
        // Fixed by a write: the row's version changes, and it loads with its page's next request.
        let failedVersion = query.latestResult.row(at: 6)?.version
        try await queue.write { db in try db.execute(sql: "UPDATE event SET day = '2026-11-28' WHERE id = 7") }
        try await within("the fixed row's update") {
            while query.latestResult.row(at: 6)?.version == failedVersion { try await Task.sleep(for: .milliseconds(10)) }
        }
        cache.update(result: query.latestResult)
        _ = cache.rows(in: 0..<60)
        await cache.waitForLoads()
        #expect(cache.rowFailure(atPosition: 6) == nil)
        if case .loaded = cache.rows(in: 6..<7)[0] {} else { Issue.record("the fixed row loads") }
    }

    @Test("the table loader reads a page in one query; a locked database fails the page, retry recovers")
    func tableLoaderAndLockedDatabase() async throws {
        let path = try TestDatabase.path()
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT, version INTEGER NOT NULL DEFAULT 0)")
            for index in 0..<120 { try db.execute(sql: "INSERT INTO item(name) VALUES (?)", arguments: ["n\(1000 + index)"]) }
        }
        let query = try await LiveQuery<Int64>.open(Self.byName, in: queue, options: .init(dataVersionPollInterval: nil))
        var configuration = Configuration()
        configuration.busyMode = .immediateError
        let reader = try DatabaseQueue(path: path, configuration: configuration)
        let cache = RowCache<Int64, String>(pageSize: 50, maximumPages: 10, loader: RowCache.tableLoader(reader: reader, table: "item", columns: ["name"]) { row in
            row["name"]
        })
        cache.update(result: await query.completeResult())
        var blockerConfiguration = Configuration()
        blockerConfiguration.allowsUnsafeTransactions = true
        let blocker = try DatabaseQueue(path: path, configuration: blockerConfiguration)
        try await blocker.writeWithoutTransaction { db in try db.execute(sql: "BEGIN EXCLUSIVE") }
        _ = cache.rows(in: 0..<50)
        await cache.waitForLoads()
        guard case let .failed(failure) = cache.pageState(0) else {
            Issue.record("expected a failed page while the database is locked, got \(cache.pageState(0))")
            return
        }
        try await blocker.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
        failure.retry()
        await cache.waitForLoads()
        let slots = cache.rows(in: 0..<50)
        if case let .loaded(_, name) = slots[0] { #expect(name == "n1000") } else { Issue.record("row 0 not loaded") }
        #expect(cache.statistics.pageQueries == 2)
        withExtendedLifetime(query) {}
    }

    @Test("rows an update changed are held at their new versions from the committed loader; a page load that straddles the update does not replace them; a row that does not decode fails alone")
    func committedRows() async throws {
        let queue = try Self.database(rows: 20)
        let query = try await LiveQuery<Int64>.open(Self.byName, in: queue, options: .init(dataVersionPollInterval: nil, firstScreenRows: nil))
        defer { query.cancel() }
        let gate = AsyncStream<Void>.makeStream()
        let cache = RowCache<Int64, String>(pageSize: 50, loader: { ids in
            for await _ in gate.stream { break }   // answers once the update is held
            return Dictionary(uniqueKeysWithValues: ids.map { ($0, "page \($0)") })
        }, committed: { rows in
            Dictionary(uniqueKeysWithValues: rows.map { row in
                (row.id, row.id == 2 ? Result<String, any Error>.failure(LoaderProbe.InjectedFailure()) : .success("commit \(row.id)"))
            })
        })
        let events = query.events
        cache.update(result: query.latestResult)
        _ = cache.rows(in: 0..<10)   // page 0's load starts, and waits
        try await withTimeLimit { try await queue.write { db in try db.execute(sql: "UPDATE item SET version = version + 1 WHERE id IN (1, 2)") } }
        let next = try await withTimeLimit { () -> LiveQueryUpdate<Int64>? in
            for await event in events { if case let .update(update) = event { return update } }
            return nil
        }
        let update = try #require(next)
        cache.update(with: update)
        let row = try #require(update.result.row(at: 0))
        #expect(row.id == 1 && cache.content(of: 1, version: row.version) == "commit 1")
        #expect(cache.rowFailure(atPosition: 1) != nil, "the row that does not decode fails alone")
        gate.continuation.finish()
        try await withTimeLimit { await cache.waitForLoads() }
        #expect(cache.content(of: 1, version: row.version) == "commit 1", "the page's older answer does not replace it")
        if case let .loaded(_, content) = cache.rows(in: 2..<3)[0] { #expect(content == "page 3") } else { Issue.record("row 3 from its page") }
        #expect(cache.statistics.rowsFromCommits == 1 && cache.statistics.failedRows == 1)
    }

    @Test("finished loads are let go of without anyone waiting: an app that never calls waitForLoads keeps nothing")
    func finishedLoadsAreReleased() async throws {
        let queue = try Self.database(rows: 2_000)
        let query = try await LiveQuery<Int64>.open(Self.byName, in: queue, options: .init(dataVersionPollInterval: nil, firstScreenRows: nil))
        let probe = LoaderProbe()
        let cache = RowCache(pageSize: 50, maximumPages: 10, loader: probe.loader)
        cache.update(result: query.initialResult)
        for window in stride(from: 0, to: 2_000, by: 100) { _ = cache.rows(in: window..<window + 100) }
        #expect(cache.statistics.pageQueries == 40)
        try await withTimeLimit {
            while cache.loadsInFlight > 0 { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(cache.loadsInFlight == 0)
        withExtendedLifetime(query) {}
    }
}
