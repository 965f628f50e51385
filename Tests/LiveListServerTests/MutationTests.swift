import Foundation
import GRDB
import ListTesting
import LiveListClient
import LiveListServer
import LiveListServerSQLite
import LiveListWire
import LiveQuery
import OwnThread
import Testing

/// Published mutations over SQLite, end to end: applied once per (client, number) whatever is
/// sent again, refused with typed errors that use (or not) the number, and answered after the
/// connection's lists were sent the commit.
@Suite("Published mutations", .serialized, .timeLimit(.minutes(2)))
struct MutationTests {
    static let mutations = [
        PublishedMutation(name: "archive", parameters: [QueryParameter("id", type: .integer)],
                          statements: [.init("UPDATE message SET folder = 'archive' WHERE id = :id AND folder = 'inbox'", mustChangeRows: true)]),
        PublishedMutation(name: "bump", statements: [.init("UPDATE counter SET n = n + 1")]),
        PublishedMutation(name: "send", parameters: [QueryParameter("subject", type: .text)], statements: [
            .init("INSERT INTO message (day, sender, subject, folder) VALUES (99, 'me', :subject, 'inbox')"),
            .init("UPDATE counter SET n = n + 100"),
        ]),
        PublishedMutation(name: "broken", statements: [.init("UPDATE counter SET n = n + 1"), .init("INSERT INTO counter (n) VALUES (NULL)")]),
        PublishedMutation(name: "picky", parameters: [QueryParameter("word", type: .text)]) { db, arguments in
            try db.execute(sql: "UPDATE counter SET n = n + 1000")
            guard arguments["word"] == .text("please") else { throw MutationRefusal.conflict("say please") }
        },
        PublishedMutation(name: "mine", parameters: [QueryParameter("owner", type: .text, claim: "sub")], statements: [.init("UPDATE counter SET n = n + 1")]),
    ]

    static func start(rows: Int = 60) async throws -> WireFixture {
        let fixture = try await WireFixture.start(rows: rows, seed: 41, mutations: mutations, busyTimeout: 0.5)
        try await fixture.pool.write { db in
            try db.execute(sql: "CREATE TABLE counter(n INTEGER NOT NULL)")
            try db.execute(sql: "INSERT INTO counter VALUES (0)")
        }
        return fixture
    }

    /// A bare connection: frames sent as the protocol writes them, every message received kept.
    final class Wire: @unchecked Sendable {
        let connection: RemoteConnection
        private var iterator: AsyncThrowingStream<String, any Error>.Iterator

        init(_ url: String) async throws {
            connection = try await WebSocketTransport().connect(to: url)
            iterator = connection.frames.makeAsyncIterator()
        }

        func send(_ message: ClientMessage) { connection.send(message.encoded()) }

        func next() async throws -> ServerMessage {
            guard let frame = try await iterator.next() else { throw WireClosed() }
            return try ServerMessage.decode(Array(frame.utf8))
        }

        /// Messages up to and including the first that answers mutation `id`.
        func untilAnswer(to id: Int64) async throws -> [ServerMessage] {
            var messages: [ServerMessage] = []
            while true {
                let message = try await next()
                messages.append(message)
                switch message {
                case let .mutated(mutated) where mutated.id == id: return messages
                case let .error(error) where error.mutation?.id == id: return messages
                default: continue
                }
            }
        }

        struct WireClosed: Error {}
    }

    /// The database's write lock, held by another connection (as another process would) on a
    /// thread of its own, so that the test's tasks go on meanwhile.
    struct WriteLock {
        let held: Locked<Bool>
        let holding: Task<Void, any Error>

        static func hold(_ path: String) async throws -> WriteLock {
            let held = Locked(false)
            let blocker = try DatabaseQueue(path: path)
            let holding = Task {
                try await onOwnThread { try blocker.writeWithoutTransaction { db in
                    try db.execute(sql: "BEGIN IMMEDIATE")
                    held.set(true)
                    while held.value { Thread.sleep(forTimeInterval: 0.01) }
                    try db.execute(sql: "ROLLBACK")
                } }
            }
            try await eventually("the lock is held", seconds: 10) { held.value }
            return WriteLock(held: held, holding: holding)
        }

        func release() async throws {
            held.set(false)
            try await holding.value
        }
    }

    /// A value shared with a thread that blocks.
    final class Locked<Value: Sendable>: @unchecked Sendable {   // `stored` only under `lock`.
        private let lock = NSLock()
        private var stored: Value
        init(_ value: Value) { stored = value }
        var value: Value { lock.withLock { stored } }
        func set(_ value: Value) { lock.withLock { stored = value } }
    }

    static func counter(_ fixture: WireFixture) throws -> Int64 {
        try fixture.pool.read { db in try Int64.fetchOne(db, sql: "SELECT n FROM counter") ?? -1 }
    }

    @Test("a mutation sent again is answered with its first outcome and applied once; a gap is refused")
    func exactlyOnce() async throws {
        let fixture = try await Self.start()
        let wire = try await Wire(fixture.url)
        wire.send(.mutate(WireMutation(client: "phone", id: 1, name: "bump")))
        guard case let .mutated(first)? = try await wire.untilAnswer(to: 1).last else { Issue.record("no mutated"); return }
        #expect(!first.duplicate)
        // Sent again (a lost answer), on another connection: answered, not applied again.
        let other = try await Wire(fixture.url)
        other.send(.mutate(WireMutation(client: "phone", id: 1, name: "bump")))
        guard case let .mutated(again)? = try await other.untilAnswer(to: 1).last else { Issue.record("no mutated"); return }
        #expect(again.duplicate)
        #expect(try Self.counter(fixture) == 1)
        // Number 3 before 2: refused, nothing applied, 2 is named.
        other.send(.mutate(WireMutation(client: "phone", id: 3, name: "bump")))
        guard case let .error(gap)? = try await other.untilAnswer(to: 3).last else { Issue.record("no error"); return }
        #expect(gap.code == .mutationOutOfOrder && gap.message.contains("2 is expected") && gap.mutation == WireMutationID(client: "phone", id: 3))
        #expect(try Self.counter(fixture) == 1)
        // Another client's numbers are its own.
        other.send(.mutate(WireMutation(client: "tablet", id: 1, name: "bump")))
        guard case .mutated? = try await other.untilAnswer(to: 1).last else { Issue.record("no mutated"); return }
        #expect(try Self.counter(fixture) == 2)
        wire.connection.close()
        other.connection.close()
        await fixture.stop()
    }

    @Test("refusals roll the mutation back, use its number, and are given again to a resend; busy uses none")
    func refusals() async throws {
        let fixture = try await Self.start()
        let wire = try await Wire(fixture.url)
        let cases: [(WireMutation, WireErrorCode)] = [
            (WireMutation(client: "c", id: 1, name: "broken"), .mutationFailed),                          // NOT NULL: rolled back
            (WireMutation(client: "c", id: 1, name: "broken"), .mutationFailed),                          // the same answer again
            (WireMutation(client: "c", id: 2, name: "archive", arguments: ["id": .integer(999_999)]), .conflict), // no such row
            (WireMutation(client: "c", id: 3, name: "picky", arguments: ["word": .text("now")]), .conflict),     // the code refuses
            (WireMutation(client: "c", id: 3, name: "picky", arguments: ["word": .text("please")]), .conflict), // 3 is used: first answer
            (WireMutation(client: "c", id: 4, name: "nothing"), .unknownMutation),
            (WireMutation(client: "c", id: 5, name: "archive", arguments: ["id": .text("x")]), .badArguments),
            (WireMutation(client: "c", id: 6, name: "mine"), .unauthorized),                               // no token, no claim
            (WireMutation(client: "c", id: 4, name: "bump"), .unknownMutation),                            // 4's answer stays
        ]
        for (mutation, code) in cases {
            wire.send(.mutate(mutation))
            guard case let .error(error)? = try await wire.untilAnswer(to: mutation.id).last else {
                Issue.record("\(mutation.name) #\(mutation.id) was not refused")
                continue
            }
            #expect(error.code == code, "\(mutation.name) #\(mutation.id): \(error)")
        }
        #expect(try Self.counter(fixture) == 0)
        // The next number runs.
        wire.send(.mutate(WireMutation(client: "c", id: 7, name: "picky", arguments: ["word": .text("please")])))
        guard case .mutated? = try await wire.untilAnswer(to: 7).last else { Issue.record("7 was not applied"); return }
        #expect(try Self.counter(fixture) == 1_000)
        // A database busy for longer than its timeout (another process holds the write lock):
        // nothing recorded, number 8 still free.
        let lock = try await WriteLock.hold(fixture.path)
        wire.send(.mutate(WireMutation(client: "c", id: 8, name: "bump")))
        let busyAnswer = try await wire.untilAnswer(to: 8).last
        try await lock.release()
        guard case let .error(busy)? = busyAnswer else { Issue.record("8 was not refused"); return }
        #expect(busy.code == .mutationUnavailable)
        wire.send(.mutate(WireMutation(client: "c", id: 8, name: "bump")))
        guard case .mutated? = try await wire.untilAnswer(to: 8).last else { Issue.record("8 was not applied"); return }
        #expect(try Self.counter(fixture) == 1_001)
        wire.connection.close()
        await fixture.stop()
    }

    @Test("a value not in the protocol's form, or an id written 3.0, refuses that request alone (badArguments, the number used); the connection goes on")
    func badValuesRefuseTheirRequest() async throws {
        let fixture = try await Self.start()
        let wire = try await Wire(fixture.url)
        let frames: [(String, Int64, WireErrorCode)] = [
            (#"{"type":"mutate","client":"c","id":1,"name":"archive","arguments":{"id":{"i":"99999999999999999999"}}}"#, 1, .badArguments),
            (#"{"type":"mutate","client":"c","id":2,"name":"bump","arguments":{"x":{"f":"nan"}}}"#, 2, .badArguments),
            (#"{"type":"mutate","client":"c","id":3.0,"name":"bump"}"#, 3, .badArguments),
            // Number 3 was used by the refusal: written as the protocol writes it, the answer is the first one.
            (#"{"type":"mutate","client":"c","id":3,"name":"bump"}"#, 3, .badArguments),
            // Read as 16: not the next number.
            (#"{"type":"mutate","client":"c","id":1.6e1,"name":"bump"}"#, 16, .mutationOutOfOrder),
        ]
        for (frame, id, code) in frames {
            wire.connection.send(frame)
            guard case let .error(error)? = try await wire.untilAnswer(to: id).last else {
                Issue.record("\(frame) was not refused")
                continue
            }
            #expect(error.code == code && error.mutation == WireMutationID(client: "c", id: id), "\(frame): \(error)")
        }
        // A subscription with such an argument is refused alone too; the connection serves the next.
        wire.connection.send(#"{"type":"subscribe","sub":1,"query":"inbox","arguments":{"folder":{"b":"%"}},"window":[0,5]}"#)
        guard case let .error(refused) = try await wire.next() else { throw Wire.WireClosed() }
        #expect(refused.code == .badArguments && refused.sub == 1, "\(refused)")
        wire.send(.mutate(WireMutation(client: "c", id: 4, name: "bump")))
        guard case .mutated? = try await wire.untilAnswer(to: 4).last else { Issue.record("4 was not applied"); return }
        #expect(try Self.counter(fixture) == 1)
        wire.connection.close()
        await fixture.stop()
    }

    @Test("a connection's mutations wait in a bounded lane: past it, mutationUnavailable at once, nothing applied, sent again in order; a window moves meanwhile")
    func boundedLane() async throws {
        var configuration = LiveListServer.Configuration()
        configuration.maximumPendingMutations = 3
        let fixture = try await WireFixture.start(rows: 60, seed: 43, configuration: configuration, mutations: Self.mutations, busyTimeout: 5)
        try await fixture.pool.write { db in
            try db.execute(sql: "CREATE TABLE counter(n INTEGER NOT NULL)")
            try db.execute(sql: "INSERT INTO counter VALUES (0)")
        }
        let wire = try await Wire(fixture.url)
        wire.send(.subscribe(WireSubscription(sub: 1, query: "inbox", window: WireWindow(start: 0, count: 10))))
        guard case .reset = try await wire.next() else { Issue.record("no reset"); return }
        // Another process holds the write lock: the first mutation waits for it, the lane fills,
        // and those past it are refused at once (the fifth, and the fourth too when the first
        // has not left the lane yet).
        let lock = try await WriteLock.hold(fixture.path)
        for id in 1...5 { wire.send(.mutate(WireMutation(client: "lane", id: Int64(id), name: "bump"))) }
        guard case let .error(refused) = try await wire.next(), let firstRefused = refused.mutation?.id else {
            Issue.record("none was refused at once")
            return
        }
        #expect(refused.code == .mutationUnavailable && firstRefused >= 4, "\(refused)")
        var refusedAtOnce: Set<Int64> = [firstRefused]
        // The subscription is served while the mutations wait.
        wire.send(.window(sub: 1, WireWindow(start: 20, count: 10)))
        moving: while true {
            switch try await wire.next() {
            case .rows: break moving
            case let .error(error) where error.code == .mutationUnavailable:
                if let id = error.mutation?.id { refusedAtOnce.insert(id) }
            case let message:
                Issue.record("the window did not move: \(message)")
                return
            }
        }
        let skipped = refusedAtOnce.min() ?? firstRefused
        #expect(refusedAtOnce.allSatisfy { $0 >= 4 }, "\(refusedAtOnce)")
        try await lock.release()
        // Those before the refused one apply; those after it are out of order (it did not run).
        var answers: [Int64: ServerMessage] = [:]
        while answers.count < 5 - refusedAtOnce.count {
            let message = try await wire.next()
            switch message {
            case let .mutated(mutated): answers[mutated.id] = message
            case let .error(error): if let id = error.mutation?.id { answers[id] = message }
            default: continue
            }
        }
        for id in Int64(1)...5 where !refusedAtOnce.contains(id) {
            switch answers[id] {
            case .mutated? where id < skipped: break
            case let .error(error)? where id > skipped: #expect(error.code == .mutationOutOfOrder, "\(id): \(error)")
            default: Issue.record("mutation \(id): \(String(describing: answers[id]))")
            }
        }
        // Sent again from the refused one, in order: applied.
        for id in skipped...5 {
            wire.send(.mutate(WireMutation(client: "lane", id: id, name: "bump")))
            guard case .mutated? = try await wire.untilAnswer(to: id).last else { Issue.record("\(id) not applied"); return }
        }
        #expect(try Self.counter(fixture) == 5)
        wire.connection.close()
        await fixture.stop()
    }

    @Test("mutated follows the connection's changes through the commit, at the version they reach")
    func mutatedFollowsChanges() async throws {
        let fixture = try await Self.start()
        let wire = try await Wire(fixture.url)
        wire.send(.subscribe(WireSubscription(sub: 5, query: "inbox", window: WireWindow(start: 0, count: 200))))
        guard case let .reset(reset) = try await wire.next() else { Issue.record("no reset"); return }
        var version = reset.version
        let inbox = try fixture.select()
        let target = try #require(inbox.rows.first?.first)
        guard case let .integer(id) = target else { Issue.record("id \(target)"); return }
        wire.send(.mutate(WireMutation(client: "web", id: 1, name: "archive", arguments: ["id": .integer(id)])))
        var sawChange = false
        for message in try await wire.untilAnswer(to: 1) {
            switch message {
            case let .changes(changes):
                #expect(changes.from == version)
                version = changes.to
                sawChange = sawChange || changes.changes.itemDeletes.count == 1
            case let .mutated(mutated):
                #expect(sawChange, "mutated came before the changes of its commit")
                #expect(mutated.versions == [5: version])
            default:
                Issue.record("unexpected \(message)")
            }
        }
        // The commit: the row left the inbox.
        #expect(try fixture.select().rows.count == inbox.rows.count - 1)
        wire.connection.close()
        await fixture.stop()
    }

    @Test("RemoteMutator: on return the lists shown hold the commit; a lost connection resends, applied once")
    @MainActor
    func mutatorShowsCommit() async throws {
        let fixture = try await Self.start()
        let client = WireClient(url: fixture.url, viewportRows: 10, window: 0..<100)
        try await eventually("first state") { try client.matches(fixture.select()) }
        let mutator = RemoteMutator(url: fixture.url, client: "ios-1")
        for subject in ["é", "e\u{301}", "a\0b"] {
            let mutated = try await mutator.mutate("send", arguments: ["subject": .text(subject)], showingIn: [client.remote])
            #expect(!mutated.duplicate)
            // No waiting: the list holds the commit on return.
            let oracle = try fixture.select()
            #expect(client.remote.model.state.count == oracle.rows.count)
        }
        #expect(try Self.counter(fixture) == 300)
        // The server goes away; a mutation made meanwhile waits, and is sent once it is back.
        await fixture.stop()
        let bump = Task { try await mutator.mutate("bump") }
        try await eventually("the mutation waits", seconds: 10) { mutator.pendingCount == 1 }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try Self.counter(fixture) == 300)
        let fixtureAgain = try await fixture.restart(mutations: Self.mutations)
        let mutated = try await bump.value
        #expect(mutated.id == 4 && !mutated.duplicate)
        #expect(try Self.counter(fixtureAgain) == 301)
        #expect(mutator.pendingCount == 0 && mutator.nextID == 5)
        do {
            _ = try await mutator.mutate("picky", arguments: ["word": .text("no")])
            Issue.record("a conflict was not thrown")
        } catch let RemoteListError.server(error) {
            #expect(error.code == .conflict)
        }
        mutator.stop()
        client.remote.stop()
        await fixtureAgain.stop()
    }

    @Test("RemoteMutator: mutations pending at a stop are kept, given to the next launch, and applied once")
    @MainActor
    func pendingKeptAcrossLaunches() async throws {
        let fixture = try await Self.start()
        await fixture.stop()
        let first = RemoteMutator(url: fixture.url, client: "app-1")
        let waiting = Task { try await first.mutate("bump") }
        try await eventually("the mutation waits", seconds: 10) { first.pendingCount == 1 }
        first.stop()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        let kept = first.pendingMutations
        #expect(kept.map(\.id) == [1] && first.nextID == 2)
        // The next launch, the server back: the kept mutation goes first, then a new one.
        let fixtureAgain = try await fixture.restart(mutations: Self.mutations)
        let second = RemoteMutator(url: fixtureAgain.url, client: "app-1", nextID: first.nextID, pending: kept)
        let mutated = try await second.mutate("send", arguments: ["subject": .text("after")])
        #expect(mutated.id == 2)
        try await eventually("every mutation answered", seconds: 10) { second.pendingCount == 0 }
        #expect(try Self.counter(fixtureAgain) == 101)
        second.stop()
        await fixtureAgain.stop()
    }
}
