import Foundation
import GRDB
import HummingbirdWSClient
import LiveListServer
import LiveListServerSQLite
import LiveListWire
import Logging
import ServiceLifecycle
import Testing

@Suite("Rows that cannot be read", .serialized)
struct WireReadFailureTests {
    struct Seen: Sendable {
        var rowsWithoutValues = 0
        var queryFailed = false
        var again: WireReset?
    }

    @Test("Window rows read while another connection locks the database go out without values; the list then comes again with them")
    func rowsComeAgainAfterAFailedRead() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-read-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("locked.sqlite").path
        var configuration = Configuration()
        configuration.busyMode = .timeout(0.05)
        // A rollback journal: another connection's EXCLUSIVE lock keeps readers out.
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT)")
            for index in 0..<200 { try db.execute(sql: "INSERT INTO item(name) VALUES (?)", arguments: [String(format: "n%03d", index)]) }
        }
        let server = LiveListServer(database: queue, queries: [PublishedQuery(name: "items", sql: "SELECT id, name FROM item ORDER BY name")])
        let (port, group, running) = try await WireFixture.serve(server)
        var lockerConfiguration = Configuration()
        lockerConfiguration.allowsUnsafeTransactions = true   // the lock is held across accesses on purpose
        let locker = try DatabaseQueue(path: path, configuration: lockerConfiguration)
        let url = "ws://127.0.0.1:\(port)/live"
        let seen = try await withThrowingTaskGroup(of: Seen?.self) { tasks in
            tasks.addTask {
                let (reports, report) = AsyncStream<Seen>.makeStream()
                try await WebSocketClient.connect(url: url, logger: Logger(label: "test.client")) { inbound, outbound, _ in
                    var seen = Seen()
                    defer { report.yield(seen) }
                    var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                    func next() async throws -> ServerMessage? {
                        while let message = try await messages.next() {
                            if case let .text(text) = message { return try ServerMessage.decode(Array(text.utf8)) }
                        }
                        return nil
                    }
                    try await outbound.write(.text(#"{"type":"subscribe","sub":1,"query":"items","window":[0,20]}"#))
                    guard case .reset? = try await next() else { return }
                    try locker.inDatabase { db in try db.execute(sql: "BEGIN EXCLUSIVE") }
                    try await outbound.write(.text(#"{"type":"window","sub":1,"window":[100,20]}"#))
                    while true {
                        switch try await next() {
                        case let .rows(rows)?: seen.rowsWithoutValues = rows.rows.filter { $0.values == nil }.count
                        case let .error(error)?: seen.queryFailed = seen.queryFailed || error.code == .queryFailed
                        case nil: return
                        default: break
                        }
                        if seen.rowsWithoutValues > 0, seen.queryFailed { break }
                    }
                    try locker.inDatabase { db in try db.execute(sql: "COMMIT") }
                    while let message = try await next() {
                        if case let .reset(reset) = message, reset.reason == .readFailed, reset.rows.allSatisfy({ $0.values != nil }) {
                            seen.again = reset
                            return
                        }
                    }
                }
                report.finish()
                for await seen in reports { return seen }
                return nil
            }
            tasks.addTask {
                try await Task.sleep(for: .seconds(30))
                return nil
            }
            let first = try await tasks.next() ?? nil
            tasks.cancelAll()
            return first
        }
        let result = try #require(seen, "no reset with the rows within 30 s")
        #expect(result.rowsWithoutValues == 20 && result.queryFailed)
        let again = try #require(result.again)
        let expected = try queue.read { db in try Row.fetchAll(db, sql: "SELECT id, name FROM item ORDER BY name LIMIT 20 OFFSET 100") }
        #expect(again.rows.map { $0.values ?? [] } == expected.map { [.integer($0["id"]), .text($0["name"])] })
        await group.triggerGracefulShutdown()
        _ = await running.result
    }
}
