import Foundation
import GRDB
import LiveListClient
import LiveListServer
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the server keeps for resuming clients costs what commits changed, not the list, and
/// stays within its byte limit: counted by the server's health endpoint, not timed.
@Suite("The resume buffer's cost", .serialized)
struct ResumeBufferTests {
    static let notes = PublishedQuery(name: "notes", sql: "SELECT id, body FROM note ORDER BY body, id")

    struct Health: Decodable {
        var keptChangesets: Int
        var keptBytes: Int
    }

    static func health(_ fixture: WireFixture) async throws -> Health {
        let url = try #require(URL(string: "http://127.0.0.1:\(fixture.port)/live/health"))
        let (data, _) = try await URLSession.shared.data(from: url)
        return try JSONDecoder().decode(Health.self, from: data)
    }

    /// A server over 20,000 notes (a table without the change log: another connection's commits
    /// to it are refetched), with one subscriber.
    @MainActor
    static func start(configuration: LiveListServer.Configuration) async throws -> (WireFixture, RemoteLiveQuery) {
        let fixture = try await WireFixture.start(rows: 10, seed: 3, configuration: configuration, queries: [WireFixture.inbox, notes])
        try await fixture.pool.write { db in
            try db.execute(sql: "CREATE TABLE note(id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
            for id in 1...20_000 { try db.execute(sql: "INSERT INTO note(id, body) VALUES (?, ?)", arguments: [id, "note \(id * 7919 % 20_000)"]) }
        }
        let remote = RemoteLiveQuery(url: fixture.url, query: "notes", window: 0..<50, prefetch: 0)
        remote.start()
        try await eventually("the first state") { remote.model.state.count == 20_000 }
        return (fixture, remote)
    }

    @Test("one-row commits, followed row by row or refetched, cost a kept changeset kilobytes, not the 20,000-row list")
    @MainActor
    func keptChangesetCostsTheChange() async throws {
        let (fixture, remote) = try await Self.start(configuration: LiveListServer.Configuration())
        let other = try DatabaseQueue(path: fixture.path)
        for (path, writer) in [("incremental", fixture.pool as any DatabaseWriter), ("refetched", other as any DatabaseWriter)] {
            let before = try await Self.health(fixture)
            let applied = remote.messagesApplied
            for commit in 0..<20 {
                try await writer.write { db in
                    try db.execute(sql: "UPDATE note SET body = body || ? WHERE id = ?", arguments: ["·\(commit)", 1 + commit * 997 % 20_000])
                }
                // Each commit its own changeset: wait for it to be kept.
                try await eventually("\(path) commit \(commit) applied") { remote.messagesApplied >= applied + commit + 1 }
            }
            let after = try await Self.health(fixture)
            let perChangeset = (after.keptBytes - before.keptBytes) / max(1, after.keptChangesets - before.keptChangesets)
            print("ResumeBufferTests: \(path): \(after.keptChangesets - before.keptChangesets) changesets, \(perChangeset) bytes each")
            // The changes and the result's shape, not its rows: the whole index of 20,000 rows is
            // about a megabyte, one commit's share of it (when the result itself was kept) 15 KB.
            #expect(perChangeset < 1_024, "\(path): \(perChangeset) bytes per kept changeset")
        }
        remote.stop()
        await fixture.stop()
    }

    @Test("the kept changesets stay within resumeBufferBytes: the oldest go")
    @MainActor
    func byteLimitDropsTheOldest() async throws {
        var configuration = LiveListServer.Configuration()
        configuration.resumeBufferBytes = 2_000
        let (fixture, remote) = try await Self.start(configuration: configuration)
        let applied = remote.messagesApplied
        for commit in 0..<40 {
            try await fixture.pool.write { db in
                try db.execute(sql: "UPDATE note SET body = body || '!' WHERE id = ?", arguments: [1 + commit * 499])
            }
        }
        try await eventually("every commit applied") { remote.messagesApplied >= applied + 40 }
        let health = try await Self.health(fixture)
        #expect(health.keptBytes <= 2_000, "\(health.keptBytes) bytes kept")
        #expect(health.keptChangesets > 0 && health.keptChangesets < 40, "\(health.keptChangesets) changesets kept")
        remote.stop()
        await fixture.stop()
    }
}
