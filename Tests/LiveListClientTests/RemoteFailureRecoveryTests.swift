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

    @Test("a queryFailed while live shows the failure; the next message ends it, for the placeholders and new subscribers")
    func failureEndsWithTheNextMessage() async throws {
        let transport = ScriptedTransport()
        let remote = RemoteLiveQuery(url: "ws://127.0.0.1:1/live", query: "q", window: 0..<4, prefetch: 0, transport: transport)
        remote.start()
        defer { remote.stop() }
        await eventually("the list subscribes") { transport.sent.withLock { $0.contains { $0.contains("\"subscribe\"") } } }
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
        var replayed: [ListSourceEvent<RemoteSection, RemoteRow>] = []
        let subscription = remote.subscribe { replayed.append($0) }
        defer { subscription.cancel() }
        #expect(!replayed.contains { if case .failure = $0 { true } else { false } }, "a new subscriber hears of no failure that is over")
    }

    @Test("a refused subscription shows its failure to the placeholders and to every later subscriber")
    func refusalIsKept() async throws {
        let transport = ScriptedTransport()
        let remote = RemoteLiveQuery(url: "ws://127.0.0.1:1/live", query: "nope", window: 0..<4, prefetch: 0, transport: transport)
        remote.start()
        defer { remote.stop() }
        await eventually("the list subscribes") { transport.sent.withLock { $0.contains { $0.contains("\"subscribe\"") } } }
        transport.server.yield(ServerMessage.error(WireError(sub: 1, code: .unknownQuery, message: "no query nope")).encoded())
        await eventually("the list is refused") { if case .refused = remote.connectionState { true } else { false } }
        #expect(remote.placeholderState.isFailed, "not loading forever")
        var replayed: [ListSourceEvent<RemoteSection, RemoteRow>] = []
        let subscription = remote.subscribe { replayed.append($0) }
        defer { subscription.cancel() }
        #expect(replayed.contains { if case .failure = $0 { true } else { false } }, "a later subscriber hears of the refusal")
    }
}
