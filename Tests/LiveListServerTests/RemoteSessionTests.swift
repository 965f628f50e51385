import DroppingTransport
import Foundation
import GRDB
import ListTesting
import LiveListClient
import LiveListServer
import LiveListWire
import NIOConcurrencyHelpers
import Testing

/// Lists and a mutator sharing one connection: one socket, one reconnect loop, and a mutation's
/// answer that speaks for the lists on it (no `sync`).
@Suite("One connection per client", .serialized, .timeLimit(.minutes(3)))
@MainActor
struct RemoteSessionTests {
    /// Counts the connections opened and the frames sent through them, by message kind.
    final class CountingTransport: RemoteTransport {
        let base: any RemoteTransport
        let counts = NIOLockedValueBox((connections: 0, sent: [String: Int]()))

        init(base: any RemoteTransport) {
            self.base = base
        }

        func connect(to url: String) async throws -> RemoteConnection {
            let connection = try await base.connect(to: url)
            counts.withLockedValue { $0.connections += 1 }
            let counts = counts
            return RemoteConnection(frames: connection.frames, send: { frame in
                let kind = (try? ClientMessage.decode(Array(frame.utf8))).map { message -> String in
                    switch message {
                    case .subscribe: "subscribe"
                    case .sync: "sync"
                    case .mutate: "mutate"
                    case .unsubscribe: "unsubscribe"
                    default: "other"
                    }
                } ?? "undecodable"
                counts.withLockedValue { $0.sent[kind, default: 0] += 1 }
                connection.send(frame)
            }, close: connection.close)
        }

        var connections: Int { counts.withLockedValue(\.connections) }
        func sent(_ kind: String) -> Int { counts.withLockedValue { $0.sent[kind] ?? 0 } }
    }

    static func rows(_ list: RemoteLiveQuery) -> [[WireValue]] {
        let state = list.model.state
        return (0..<state.count).compactMap { list.model.record(for: state.row(at: $0))?.values }
    }

    @Test("two lists and a mutator on one session open one connection; a mutation shown in both returns with both holding its commit, and no sync is sent")
    func oneConnection() async throws {
        let fixture = try await WireFixture.start(rows: 20, seed: 31, mutations: PendingChangesTests.mutations)
        let transport = CountingTransport(base: WebSocketTransport())
        let session = RemoteSession(url: fixture.url, transport: transport)
        let inbox = RemoteLiveQuery(session: session, query: "inbox", arguments: ["folder": .text("inbox")], window: 0..<100)
        let archive = RemoteLiveQuery(session: session, query: "inbox", arguments: ["folder": .text("archive")], window: 0..<100)
        let mutator = RemoteMutator(session: session, client: "session-test")
        inbox.start()
        archive.start()
        mutator.start()
        try await eventually("both first states", seconds: 20) { inbox.connectionState == .live && archive.connectionState == .live }
        #expect(session.state == .connected)
        guard let first = Self.rows(inbox).first, case let .integer(id) = first[0] else {
            Issue.record("no row in the inbox: \(Self.rows(inbox))")
            return
        }
        let archivedBefore = Self.rows(archive).count
        try await within("the mutation", seconds: 20) {
            _ = try await mutator.mutate("archive", arguments: ["id": .integer(id)], showingIn: [inbox, archive])
        }
        // Returned: both lists hold the commit already, with no sync asked for.
        #expect(!Self.rows(inbox).contains { $0[0] == .integer(id) }, "the inbox no longer shows \(id)")
        #expect(Self.rows(archive).count == archivedBefore + 1 && Self.rows(archive).contains { $0[0] == .integer(id) })
        #expect(transport.sent("sync") == 0, "a sync was sent: the answer speaks for lists on its connection")
        #expect(transport.connections == 1 && session.connectionsOpened == 1)
        #expect(transport.sent("subscribe") == 2 && transport.sent("mutate") == 1)
        // A list on a connection of its own still catches up through sync.
        let other = RemoteLiveQuery(url: fixture.url, query: "inbox", arguments: ["folder": .text("archive")], window: 0..<100,
                                    transport: transport)
        other.start()
        try await eventually("the other list's first state", seconds: 20) { other.connectionState == .live }
        guard let second = Self.rows(inbox).first, case let .integer(secondID) = second[0] else { return }
        try await within("the second mutation", seconds: 20) {
            _ = try await mutator.mutate("archive", arguments: ["id": .integer(secondID)], showingIn: [other])
        }
        #expect(Self.rows(other).contains { $0[0] == .integer(secondID) })
        #expect(transport.sent("sync") == 1, "the list on another connection syncs once")
        other.stop()
        inbox.stop()
        #expect(session.state == .connected, "the session stays while a list and the mutator use it")
        archive.stop()
        mutator.stop()
        #expect(session.state == .idle, "the last one to stop closes it")
        await fixture.stop()
    }

    @Test("a lost connection is one reconnection for all: the lists resume, the mutator sends what waits again, applied once")
    func oneReconnectLoop() async throws {
        let fixture = try await WireFixture.start(rows: 20, seed: 37, mutations: PendingChangesTests.mutations)
        let dropping = DroppingTransport()
        let transport = CountingTransport(base: dropping)
        let session = RemoteSession(url: fixture.url, transport: transport)
        let inbox = RemoteLiveQuery(session: session, query: "inbox", window: 0..<100)
        let archive = RemoteLiveQuery(session: session, query: "inbox", arguments: ["folder": .text("archive")], window: 0..<100)
        let mutator = RemoteMutator(session: session, client: "session-drop")
        inbox.start()
        archive.start()
        mutator.start()
        try await eventually("both first states", seconds: 20) { inbox.connectionState == .live && archive.connectionState == .live }
        let ids = Self.rows(inbox).prefix(3).compactMap { row -> Int64? in if case let .integer(id) = row[0] { id } else { nil } }
        #expect(ids.count == 3)
        // Mutations in flight while the connection is cut.
        let calls = ids.map { id in
            Task { @MainActor in try await mutator.mutate("archive", arguments: ["id": .integer(id)], showingIn: [inbox, archive]) }
        }
        #expect(dropping.drop() == 1, "one connection to cut")
        for call in calls {
            try await within("a mutation through the cut", seconds: 30) { _ = try await call.value }
        }
        try await eventually("both lists equal the SELECT", seconds: 20) {
            let inboxIDs = Set(Self.rows(inbox).map { $0[0] }), archivedIDs = Set(Self.rows(archive).map { $0[0] })
            return ids.allSatisfy { !inboxIDs.contains(.integer($0)) && archivedIDs.contains(.integer($0)) }
        }
        let archived = try await fixture.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM message WHERE folder = 'archive' AND id IN (\(ids.map(String.init).joined(separator: ",")))") ?? 0
        }
        #expect(archived == 3)
        #expect(session.connectionsOpened == 2 && transport.connections == 2, "one reconnection for the two lists and the mutator")
        #expect(transport.sent("subscribe") == 4, "each list subscribed once per connection")
        inbox.stop()
        archive.stop()
        mutator.stop()
        await fixture.stop()
    }
}
