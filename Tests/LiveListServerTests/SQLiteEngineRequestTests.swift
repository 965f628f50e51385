import Foundation
import GRDB
import ListTesting
import LiveListClient
import LiveListServer
import LiveListServerSQLite
import LiveListWire
import LiveQuery
import Testing

/// A query published as a request in SQLite's own terms (`PublishedQuery(name:parameters:request:)`
/// of LiveListServerSQLite), made from each subscription's arguments.
@Suite("SQLite engine requests", .serialized, .timeLimit(.minutes(2)))
struct SQLiteEngineRequestTests {
    static let inboxRequest = PublishedQuery(name: "inbox", parameters: [QueryParameter("folder", type: .text, default: .text("inbox"))]) { arguments in
        let folder: String = if case let .text(folder) = arguments["folder"] { folder } else { "inbox" }
        return LiveQueryRequest(sql: "SELECT id, day, sender, subject FROM message WHERE folder = ? ORDER BY day DESC, sender, id",
                                arguments: [folder], as: SQLValue.self, section: "day")
    }

    @Test("a SQLite request made from the arguments is served like SQL: the list equals the SELECT through commits")
    @MainActor
    func requestFollowsCommits() async throws {
        let fixture = try await WireFixture.start(rows: 120, seed: 31, queries: [Self.inboxRequest])
        let client = WireClient(url: fixture.url, viewportRows: 10, window: 0..<40)
        try await eventually("first state") { try client.matches(fixture.select()) }
        var random = SeededRandomNumberGenerator(seed: 31)
        try await fixture.randomWrites(12, &random)
        try await eventually("after commits") { try client.matches(fixture.select()) }
        client.remote.setArguments(["folder": .text("archive")])
        try await eventually("another folder") { try client.matches(fixture.select(folder: "archive")) }
        client.remote.stop()
        await fixture.stop()
    }

    @Test("a request in another engine's terms is refused with queryFailed, naming the query")
    func foreignRequestIsRefused() async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in try db.execute(sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT)") }
        let foreign = PublishedQuery(name: "elsewhere", definition: .engineRequest { _ in "SELECT 1" })
        await #expect {
            _ = try await SQLiteEngine(database: queue).open(foreign, arguments: [:])
        } throws: { error in
            guard let error = error as? WireError else { return false }
            return error.code == .queryFailed && error.message.contains("\"elsewhere\"")
        }
    }
}
