import LiveListWire
import NIOCore
import Testing
@testable import LiveListServer

/// `mutated.versions` is never older than what the connection was already sent: the versions
/// are taken as the `mutated` frame is queued, after every frame queued before it. The race it
/// closes, played in order: a subscription's notice is answered at version 4, a later commit's
/// `changes` to version 5 is queued, then the `mutated`.
@Suite("Mutated versions")
struct MutatedVersionsTests {
    static let epoch = "e1"
    static func version(_ sequence: UInt64, epoch: String = epoch) -> WireVersion { WireVersion(epoch: epoch, sequence: sequence) }

    static func changes(sub: Int, to sequence: UInt64) -> OutboxState.Frame {
        OutboxState.Frame(message: WireMessage(string: "changes \(sub) to \(sequence)"), sub: sub, isReset: false, version: version(sequence))
    }

    /// Queues a `mutated` the way the connection does, and gives its versions and every text
    /// the writer task takes, in order.
    static func mutated(_ outbox: Outbox, noticed: [Int: WireVersion]) async -> (versions: [Int: WireVersion], texts: [String]) {
        outbox.send(holding: noticed) { versions in
            let mutated = WireMutated(client: "c", id: 1, versions: versions, duplicate: false)
            return Outbox.Frame(message: WireMessage(string: ServerMessage.mutated(mutated).encoded()), sub: nil, isReset: false)
        }
        guard case let .write(buffers) = await outbox.next() else { return ([:], []) }
        let texts = buffers.map { String(buffer: $0) }
        guard let last = texts.last, case let .mutated(mutated)? = try? ServerMessage.decode(Array(last.utf8)) else { return ([:], texts) }
        return (mutated.versions, texts)
    }

    @Test("a commit's changes queued after the notice: mutated names its version, and follows it")
    func laterChangesBetweenNoticeAndMutated() async {
        let outbox = Outbox(byteLimit: 1 << 20)
        outbox.send(Self.changes(sub: 1, to: 4))
        outbox.send(Self.changes(sub: 2, to: 9))
        // The notices were answered at 4 and 9; then another commit's changes reach sub 1.
        outbox.send(Self.changes(sub: 1, to: 5))
        let (versions, texts) = await Self.mutated(outbox, noticed: [1: Self.version(4), 2: Self.version(9)])
        #expect(versions == [1: Self.version(5), 2: Self.version(9)])
        #expect(texts.prefix(3) == ["changes 1 to 4", "changes 2 to 9", "changes 1 to 5"], "mutated comes after the changes it names")
    }

    @Test("the rule: the later of the notice and the last frame queued; another epoch (new arguments) is the last queued; a subscription never sent a frame keeps its notice; subscriptions left out stay out")
    func rule() {
        var state = OutboxState(byteLimit: 1 << 20)
        _ = state.send(Self.changes(sub: 1, to: 7))
        _ = state.send(OutboxState.Frame(message: WireMessage(string: "reset"), sub: 2, isReset: true, version: Self.version(3, epoch: "e2")))
        _ = state.send(OutboxState.Frame(message: WireMessage(string: "error"), sub: 3, isReset: false))
        _ = state.send(Self.changes(sub: 4, to: 1))
        let noticed = [1: Self.version(8), 2: Self.version(40), 3: Self.version(2)]
        #expect(state.versions(holding: noticed) == [1: Self.version(8), 2: Self.version(3, epoch: "e2"), 3: Self.version(2)])
    }
}
