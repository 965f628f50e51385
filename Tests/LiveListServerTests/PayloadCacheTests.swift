import Foundation
import ListDiff
import LiveListServerSQLite
import LiveListWire
import LiveQueryCore
import NIOConcurrencyHelpers
import Testing
@testable import LiveListServer

/// The cache of rows' contents a hub sends: bounded, and past its bound it lets its oldest rows
/// go, not every row.
@Suite("Payload cache", .timeLimit(.minutes(1)))
struct PayloadCacheTests {
    /// SQLite's served query, counting the rows whose values are read.
    struct CountingQuery: ServedLiveQuery {
        let inner: any ServedLiveQuery
        let read = NIOLockedValueBox(0)
        var events: AsyncStream<LiveQueryEvent<SQLValue>> { inner.events }
        var columnNames: [String] { inner.columnNames }
        func values(of rows: [LiveRow<SQLValue>]) async throws -> [SQLValue: [SQLValue]] {
            read.withLockedValue { $0 += rows.count }
            return try await inner.values(of: rows)
        }
        func cancel() { inner.cancel() }
    }

    @Test("past its capacity the rows kept longest go, an eighth at least at a time; the others are not read again")
    func evictsTheOldest() async throws {
        let fixture = try await WireFixture.start(rows: 40, seed: 41)
        let inner = try await SQLiteEngine(database: fixture.pool).open(WireFixture.inbox, arguments: ["folder": .text("inbox")])
        let query = CountingQuery(inner: inner)
        var result: LiveResult<SQLValue>?
        for await event in query.events {
            if case let .initial(initial) = event { result = initial }
            break
        }
        guard let result, result.count >= 12 else {
            Issue.record("the inbox holds \(result?.count ?? 0) rows")
            return
        }
        let cache = PayloadCache(query: query, capacity: 10)
        _ = await cache.rows(at: Set(0..<4), in: result)
        _ = await cache.rows(at: Set(4..<12), in: result)
        #expect(cache.count == 10, "4 + 8 rows in a cache of 10: the 2 oldest went")
        #expect(query.read.withLockedValue { $0 } == 12)
        let sent = await cache.rows(at: Set(4..<12), in: result)
        #expect(query.read.withLockedValue { $0 } == 12, "the latest rows are all kept")
        #expect(sent.rows.count == 8 && sent.rows.values.allSatisfy { $0.values != nil })
        _ = await cache.rows(at: Set(0..<4), in: result)
        #expect(query.read.withLockedValue { $0 } == 14, "of the first 4 rows, only the 2 that went are read again")
        query.cancel()
        await fixture.stop()
    }
}
