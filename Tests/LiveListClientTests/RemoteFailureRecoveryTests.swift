import Foundation
import ListDiff
import ListPresenter
import LiveListWire
import Testing
@testable import LiveListClient

/// A list's failure ends when the server's messages flow again, whatever failed: no placeholder
/// stays "failed" and no new subscriber hears of a failure that is over.
@Suite("A remote list recovers from a failed query")
@MainActor
struct RemoteFailureRecoveryTests {
    /// A connection whose frames the test writes, and whose sent frames it reads.
    final class ScriptedTransport: RemoteTransport, Sendable {
        let frames: AsyncThrowingStream<String, any Error>
        let server: AsyncThrowingStream<String, any Error>.Continuation
        let sent = Locked<[String]>([])

        init() {
            (frames, server) = AsyncThrowingStream.makeStream()
        }

        func connect(to url: String) async throws -> RemoteConnection {
            RemoteConnection(frames: frames, send: { [sent] frame in sent.withLock { $0.append(frame) } }, close: {})
        }
    }

    static let version = WireVersion(epoch: "t", sequence: 0)

    /// Waits, at most 60 s, until `condition` holds: the main actor can be starved for tens of
    /// seconds when every suite runs at once on a loaded machine.
    func eventually(_ what: Comment, _ condition: @MainActor () -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition(), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        #expect(condition(), what)
    }

    /// A list of `query` on a scripted connection, started, once its subscription is sent (as
    /// number 1).
    func subscribed(to query: String) async -> (ScriptedTransport, RemoteLiveQuery) {
        let transport = ScriptedTransport()
        let remote = RemoteLiveQuery(url: "ws://127.0.0.1:1/live", query: query, window: 0..<4, prefetch: 0, transport: transport)
        remote.start()
        await eventually("the list subscribes") { transport.sent.withLock { $0.contains { $0.contains("\"subscribe\"") } } }
        return (transport, remote)
    }

    /// Whether a subscriber that comes now is handed a failure.
    func failureReplayed(by remote: RemoteLiveQuery) -> Bool {
        var replayed: [ListSourceEvent<RemoteSection, RemoteRow>] = []
        let subscription = remote.subscribe { replayed.append($0) }
        subscription.cancel()
        return replayed.contains { if case .failure = $0 { true } else { false } }
    }

    @Test("a queryFailed while live shows the failure; the next message ends it, for the placeholders and new subscribers")
    func failureEndsWithTheNextMessage() async throws {
        let (transport, remote) = await subscribed(to: "q")
        defer { remote.stop() }
        let reset = WireReset(sub: 1, version: Self.version, reason: .subscribed, columns: ["id"], sections: [WireSection(key: .null, count: 10)],
                              window: WireWindow(0..<4), rows: (0..<4).map { WireRow(position: $0, id: .integer(Int64($0)), values: [.integer(Int64($0))]) })
        transport.server.yield(ServerMessage.reset(reset).encoded())
        await eventually("the list is live") { remote.connectionState == .live }
        #expect(!remote.placeholderState.isFailed)

        transport.server.yield(ServerMessage.error(WireError(sub: 1, code: .queryFailed, message: "disk I/O error")).encoded())
        await eventually("the failure shows") { remote.placeholderState.isFailed }

        // The server's query recovered: its next commit reaches the list.
        var changes = ListChanges()
        changes.itemDeletes = [ItemPath(section: 0, item: 9)]
        transport.server.yield(ServerMessage.changes(WireChanges(sub: 1, from: Self.version, to: Self.version.next, changes: changes,
                                                                 insertedSectionKeys: [], insertedIDs: [], movedIDs: [], reloadedIDs: [],
                                                                 rows: [])).encoded())
        await eventually("the commit is applied") { remote.model.version == Self.version.next }
        #expect(!remote.placeholderState.isFailed, "rows not sent yet are loading again, not failed")
        #expect(!failureReplayed(by: remote), "a new subscriber hears of no failure that is over")
    }

    @Test("a refused subscription shows its failure to the placeholders and to every later subscriber")
    func refusalIsKept() async throws {
        let (transport, remote) = await subscribed(to: "nope")
        defer { remote.stop() }
        transport.server.yield(ServerMessage.error(WireError(sub: 1, code: .unknownQuery, message: "no query nope")).encoded())
        await eventually("the list is refused") { if case .refused = remote.connectionState { true } else { false } }
        #expect(remote.placeholderState.isFailed, "not loading forever")
        #expect(failureReplayed(by: remote), "a later subscriber hears of the refusal")
    }
}
