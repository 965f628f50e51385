import Foundation
import GRDB
import HummingbirdWSClient
import ListDiff
import LiveListServer
import LiveListServerSQLite
import LiveListWire
import LiveQuery
import Logging
import ServiceLifecycle
import Testing

/// A served query whose results come from a SQLite live query and whose positions the test sets:
/// the hub's rules for positioned versions (those of a PostgreSQL server), without PostgreSQL.
/// `@unchecked Sendable`: `held` is only touched under `lock`.
final class ScriptedQuery: ServedLiveQuery, @unchecked Sendable {
    let inner: any ServedLiveQuery
    private let continuation: AsyncStream<ServedLiveQueryEvent>.Continuation
    let servedEvents: AsyncStream<ServedLiveQueryEvent>
    private let lock = NSLock()
    private var held: [ListStateID: [ClosedRange<UInt64>]] = [:]
    private var withheld: Set<SQLValue> = []

    init(_ inner: any ServedLiveQuery) {
        self.inner = inner
        (servedEvents, continuation) = AsyncStream<ServedLiveQueryEvent>.makeStream()
    }

    var events: AsyncStream<LiveQueryEvent<SQLValue>> { inner.events }
    var columnNames: [String] { inner.columnNames }
    func values(of rows: [LiveRow<SQLValue>]) async throws -> [SQLValue: [SQLValue]] {
        let withheld = lock.withLock { self.withheld }
        return try await inner.values(of: rows).filter { !withheld.contains($0.key) }
    }

    /// Rows whose values reads leave out, as when they changed again before the read.
    func withhold(_ ids: Set<SQLValue>) { lock.withLock { withheld = ids } }
    func cancel() { inner.cancel() }
    var positionsName: String? { "scripted" }
    func position(of result: LiveResult<SQLValue>) -> UInt64? { result.stateID.flatMap { state in lock.withLock { held[state]?.first?.lowerBound } } }
    func holds(_ state: ListStateID, at position: UInt64) -> Bool {
        lock.withLock { held[state]?.contains { $0.contains(position) } ?? false }
    }

    /// `result` is the query's result at these positions.
    func hold(_ result: LiveResult<SQLValue>, _ ranges: [ClosedRange<UInt64>]) {
        guard let state = result.stateID else { return }
        lock.withLock { held[state] = ranges }
    }

    func emit(_ event: ServedLiveQueryEvent) { continuation.yield(event) }
}

/// Opens SQLite's queries and hands each, wrapped, to the test.
final class ScriptedEngine: LiveQueryEngine, @unchecked Sendable {
    let sqlite: SQLiteEngine
    let (opened, openedContinuation) = AsyncStream<ScriptedQuery>.makeStream()

    init(_ pool: DatabasePool) { sqlite = SQLiteEngine(database: pool) }

    func open(_ query: PublishedQuery, arguments: [String: WireValue]) async throws -> any ServedLiveQuery {
        let scripted = ScriptedQuery(try await sqlite.open(query, arguments: arguments))
        openedContinuation.yield(scripted)
        return scripted
    }
}

/// One raw client: sends frames, reads messages, and checks every `changes` starts at the
/// version it holds and that its versions never go back.
final class CheckingClient: @unchecked Sendable {
    private let lock = NSLock()
    private var messages: [ServerMessage] = []
    private var held: [Int: WireVersion] = [:]
    private(set) var violations: [String] = []
    private let outbound: AsyncStream<String>.Continuation
    private let task: Task<Void, any Error>

    init(url: String) {
        let (frames, outbound) = AsyncStream<String>.makeStream()
        self.outbound = outbound
        let box = Box()
        task = Task {
            try await WebSocketClient.connect(url: url, logger: Logger(label: "test.client")) { inbound, writer, _ in
                let sender = Task { for await frame in frames { try await writer.write(.text(frame)) } }
                defer { sender.cancel() }
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    guard case let .text(text) = message, let decoded = try? ServerMessage.decode(Array(text.utf8)) else { continue }
                    box.client?.receive(decoded)
                }
            }
        }
        box.client = self
    }

    private final class Box: @unchecked Sendable { weak var client: CheckingClient? }

    func send(_ frame: String) { outbound.yield(frame) }

    private func receive(_ message: ServerMessage) {
        lock.withLock {
            messages.append(message)
            switch message {
            case let .reset(reset):
                if let previous = held[reset.sub], previous.epoch == reset.version.epoch, reset.version.sequence < previous.sequence {
                    violations.append("reset back from \(previous) to \(reset.version)")
                }
                held[reset.sub] = reset.version
            case let .changes(changes):
                if let previous = held[changes.sub], previous != changes.from { violations.append("changes from \(changes.from), held \(previous)") }
                if changes.from.epoch == changes.to.epoch, changes.to.sequence < changes.from.sequence {
                    violations.append("changes back from \(changes.from) to \(changes.to)")
                }
                held[changes.sub] = changes.to
            case let .error(error):
                if let sub = error.sub { held[sub] = nil }
            default: break
            }
        }
    }

    func hold(_ sub: Int, _ version: WireVersion) { lock.withLock { held[sub] = version } }

    var received: [ServerMessage] { lock.withLock { messages } }

    /// The next message for `sub` after the first `after` of them, within `seconds`.
    func message(_ sub: Int, after: Int, seconds: Double = 10) async throws -> ServerMessage {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            let mine = received.filter { $0.sub == sub }
            if mine.count > after { return mine[after] }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw TimeLimitExceeded(what: "message \(after) of subscription \(sub)")
    }

    func count(_ sub: Int) -> Int { received.filter { $0.sub == sub }.count }

    func close() {
        outbound.finish()
        task.cancel()
    }
}

/// A server over a `ScriptedEngine` on 20 items, with one client subscribed to the first five
/// rows and the query's first result read (not yet emitted: the test says at which position).
struct ScriptedFixture {
    let pool: DatabasePool
    let query: ScriptedQuery
    let client: CheckingClient
    let first: LiveResult<SQLValue>
    let inner: AsyncStream<LiveQueryEvent<SQLValue>>.Iterator
    let url: String
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    static func start(_ configuration: LiveListServer.Configuration) async throws -> ScriptedFixture {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-positioned-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let pool = try DatabasePool(path: directory.appendingPathComponent("items.sqlite").path)
        try await pool.write { db in
            try db.execute(sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT)")
            for id in 1...20 { try db.execute(sql: "INSERT INTO item VALUES (?, ?)", arguments: [id, "n\(100 + id)"]) }
        }
        let engine = ScriptedEngine(pool)
        let server = LiveListServer(engine: engine, queries: [PublishedQuery(name: "items", sql: "SELECT id, name FROM item ORDER BY name")],
                                    configuration: configuration)
        let (port, group, running) = try await WireFixture.serve(server)
        let url = "ws://127.0.0.1:\(port)/live"
        var opened = engine.opened.makeAsyncIterator()
        let client = CheckingClient(url: url)
        client.send(#"{"type":"subscribe","sub":1,"query":"items","window":[0,5]}"#)
        let query = try #require(await opened.next())
        var inner = query.inner.events.makeAsyncIterator()
        guard case let .initial(first)? = await inner.next() else { throw TimeLimitExceeded(what: "the first result") }
        return ScriptedFixture(pool: pool, query: query, client: client, first: first, inner: inner, url: url, group: group, running: running)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = await running.result
    }
}

@Suite("Positioned versions: resume never goes back", .serialized, .timeLimit(.minutes(2)))
struct PositionedResumeTests {
    @Test("a resume is answered from the client's version to one at least as late: current, bumped, composed, reset or behind; an unchanged commit is told")
    func resumeRules() async throws {
        var configuration = LiveListServer.Configuration()
        configuration.resumeWait = .milliseconds(300)
        let fixture = try await ScriptedFixture.start(configuration)
        let (pool, query, first, r0, url) = (fixture.pool, fixture.query, fixture.client, fixture.first, fixture.url)
        var inner = fixture.inner
        query.hold(r0, [100...150])
        query.emit(.initial(r0, position: 100))
        guard case let .reset(reset) = try await first.message(1, after: 0) else { throw TimeLimitExceeded(what: "a reset") }
        #expect(reset.version.sequence == 100)
        let epoch = reset.version.epoch
        func resume(_ sub: Int, _ sequence: UInt64) -> String {
            #"{"type":"subscribe","sub":\#(sub),"query":"items","window":[0,5],"resume":{"version":"\#(epoch):\#(sequence)","held":[0,5]}}"#
        }

        // The result also stands at 140, which another server showed a client: it moves everyone up.
        let second = CheckingClient(url: url)
        second.hold(2, WireVersion(epoch: epoch, sequence: 140))
        second.send(resume(2, 140))
        guard case let .changes(current) = try await second.message(2, after: 0) else { throw TimeLimitExceeded(what: "changes") }
        #expect(current.from.sequence == 140 && current.to.sequence == 140 && current.changes.isEmpty)
        guard case let .changes(bumped) = try await first.message(1, after: 1) else { throw TimeLimitExceeded(what: "a bump") }
        #expect(bumped.from.sequence == 100 && bumped.to.sequence == 140 && bumped.changes.isEmpty)

        // A commit that touched the query's tables and changed nothing: every subscriber is told.
        query.hold(r0, [100...160])
        query.emit(.unchanged(through: 160))
        guard case let .changes(unchanged) = try await first.message(1, after: 2) else { throw TimeLimitExceeded(what: "unchanged") }
        #expect(unchanged.from.sequence == 140 && unchanged.to.sequence == 160 && unchanged.changes.isEmpty)
        _ = try await second.message(2, after: 1)

        // A change at 200.
        try await pool.write { db in try db.execute(sql: "UPDATE item SET name = 'a' WHERE id = 7") }
        guard case let .update(update)? = await inner.next() else { throw TimeLimitExceeded(what: "an update") }
        query.hold(r0, [100...199])
        query.hold(update.result, [200...200])
        query.emit(.update(update, position: 200))
        guard case let .changes(changed) = try await first.message(1, after: 3) else { throw TimeLimitExceeded(what: "changes") }
        #expect(changed.from.sequence == 160 && changed.to.sequence == 200 && !changed.changes.isEmpty)

        // Resumes: from a buffered result (one changeset), from older than kept (a reset at a later
        // version), from ahead (a wait, then the result that stands there), and too far ahead (behind).
        let third = CheckingClient(url: url)
        third.hold(3, WireVersion(epoch: epoch, sequence: 180))
        third.send(resume(3, 180))
        guard case let .changes(composed) = try await third.message(3, after: 0) else { throw TimeLimitExceeded(what: "composed") }
        #expect(composed.from.sequence == 180 && composed.to.sequence == 200 && !composed.changes.isEmpty)
        third.hold(4, WireVersion(epoch: epoch, sequence: 50))
        third.send(resume(4, 50))
        guard case let .reset(old) = try await third.message(4, after: 0) else { throw TimeLimitExceeded(what: "a reset") }
        #expect(old.reason == .versionUnavailable && old.version.sequence == 200)
        third.hold(5, WireVersion(epoch: epoch, sequence: 230))
        third.send(resume(5, 230))
        try await Task.sleep(for: .milliseconds(100))
        #expect(third.count(5) == 0, "waits for this server to reach 230")
        query.hold(update.result, [200...240])
        query.emit(.unchanged(through: 240))
        // Answered once this server holds a result at 230 (before or with the commit at 240).
        guard case let .changes(caughtUp) = try await third.message(5, after: 0) else { throw TimeLimitExceeded(what: "caught up") }
        #expect(caughtUp.from.sequence == 230 && caughtUp.to.sequence >= 230)
        third.hold(6, WireVersion(epoch: epoch, sequence: 900))
        third.send(resume(6, 900))
        // `behind` comes after resumeWait / catchUpInterval (15) retries of 20 ms each, one after
        // the other: on a starved cooperative pool each can take far longer than 20 ms.
        guard case let .error(behind) = try await third.message(6, after: 0, seconds: 40) else { throw TimeLimitExceeded(what: "behind") }
        #expect(behind.code == .behind)
        // The number is free again.
        third.send(#"{"type":"subscribe","sub":6,"query":"items","window":[0,5]}"#)
        guard case .reset = try await third.message(6, after: 1) else { throw TimeLimitExceeded(what: "a new subscription") }
        // The same arguments again: acknowledged, nothing changes.
        try await Task.sleep(for: .milliseconds(50))
        let before = first.count(1)
        first.send(#"{"type":"arguments","sub":1,"arguments":{}}"#)
        guard case let .changes(acknowledged) = try await first.message(1, after: before) else { throw TimeLimitExceeded(what: "an acknowledgement") }
        #expect(acknowledged.from == acknowledged.to && acknowledged.changes.isEmpty && acknowledged.to.sequence == 240)

        for client in [first, second, third] {
            #expect(client.violations.isEmpty, "\(client.violations)")
            client.close()
        }
        await fixture.stop()
    }

    @Test("a row sent without its values (it changed again before the read) is sent again, with them, in the next message")
    func unresolvedRows() async throws {
        let fixture = try await ScriptedFixture.start(LiveListServer.Configuration())
        let (query, client, r0) = (fixture.query, fixture.client, fixture.first)
        query.withhold([.integer(2)])
        query.hold(r0, [100...100])
        query.emit(.initial(r0, position: 100))
        guard case let .reset(reset) = try await client.message(1, after: 0) else { throw TimeLimitExceeded(what: "a reset") }
        #expect(reset.rows.first { $0.id == .integer(2) }?.values == nil)
        // Changed and changed back: the next message (a commit that left the list as it was) brings it.
        query.withhold([])
        query.hold(r0, [100...120])
        query.emit(.unchanged(through: 120))
        guard case let .changes(changes) = try await client.message(1, after: 1) else { throw TimeLimitExceeded(what: "changes") }
        #expect(changes.changes.isEmpty && changes.rows.map(\.id) == [.integer(2)] && changes.rows.first?.values != nil)
        // Once read, it is not sent again.
        query.hold(r0, [100...130])
        query.emit(.unchanged(through: 130))
        guard case let .changes(later) = try await client.message(1, after: 2) else { throw TimeLimitExceeded(what: "changes") }
        #expect(later.rows.isEmpty)
        #expect(client.violations.isEmpty, "\(client.violations)")
        client.close()
        await fixture.stop()
    }
}
