import ListDiff
import LiveListWire
import Testing
@testable import LiveListClient

/// The remote query's subscription — its number, its answer, arguments to take back — and what it
/// does with each error, without a connection.
@Suite("Remote subscription")
struct RemoteSubscriptionTests {
    static func error(_ code: WireErrorCode) -> RemoteListError {
        .server(WireError(sub: 1, code: code, message: "test"))
    }

    static func reset(sub: Int) -> ServerMessage {
        .reset(WireReset(sub: sub, version: WireVersion(epoch: "A", sequence: 1), reason: .subscribed, columns: [], sections: [],
                         window: WireWindow(0..<0), rows: []))
    }

    static func changes(sub: Int, from: String, to: String) -> ServerMessage {
        .changes(WireChanges(sub: sub, from: WireVersion(epoch: from, sequence: 1), to: WireVersion(epoch: to, sequence: 2), changes: ListChanges(),
                             insertedSectionKeys: [], insertedIDs: [], movedIDs: [], reloadedIDs: [], rows: []))
    }

    @Test("before its first answer a server error refuses the subscription; after it, only queryClosed does, and the others let it go on")
    func refusedOnlyBeforeTheAnswer() {
        var subscription = RemoteSubscription()
        subscription.subscribe(as: 1)
        #expect(subscription.sub == 1 && subscription.phase == .subscribing)
        #expect(subscription.recovery(from: Self.error(.badArguments)) == .refused(WireError(sub: 1, code: .badArguments, message: "test")))
        #expect(subscription.recovery(from: Self.error(.queryFailed)) == .goOn(restoring: nil, failsSyncs: true), "a failed read never refuses")
        #expect(subscription.recovery(from: Self.error(.behind)) == .reconnect)
        let resend = subscription.applied(Self.reset(sub: 1))
        #expect(resend && subscription.phase == .following, "a reset asks again for the looks waiting")
        #expect(subscription.recovery(from: Self.error(.badArguments)) == .goOn(restoring: nil, failsSyncs: false))
        #expect(subscription.recovery(from: Self.error(.queryClosed)) == .refused(WireError(sub: 1, code: .queryClosed, message: "test")))
        subscription.subscribe(as: 2)
        #expect(subscription.sub == 2 && subscription.phase == .subscribing, "each subscribe is a new, unanswered subscription")
    }

    @Test("refused arguments go back to the last accepted ones, until changes from another live query or a reset answer them")
    func argumentsTakenBack() {
        var subscription = RemoteSubscription()
        subscription.subscribe(as: 1)
        _ = subscription.applied(Self.reset(sub: 1))
        subscription.argumentsChanged(from: ["folder": .text("inbox")])
        subscription.argumentsChanged(from: ["folder": .text("archive")])
        #expect(subscription.recovery(from: Self.error(.badArguments)) == .goOn(restoring: ["folder": .text("inbox")], failsSyncs: false))
        var resend = subscription.applied(Self.changes(sub: 1, from: "A", to: "A"))
        #expect(!resend && subscription.acceptedArguments == ["folder": .text("inbox")], "changes within one live query answer nothing")
        resend = subscription.applied(Self.changes(sub: 1, from: "A", to: "B"))
        #expect(!resend && subscription.acceptedArguments == nil, "changes to another live query accept the new arguments")
    }

    @Test("a gap, a broken connection or a malformed frame subscribes again from the version held; a contradiction starts over")
    func resubscribe() {
        let subscription = RemoteSubscription()
        #expect(subscription.recovery(from: .inconsistent("count below zero")) == .resubscribe(startOver: true))
        #expect(subscription.recovery(from: .versionGap(expected: nil, received: WireVersion(epoch: "A", sequence: 3))) == .resubscribe(startOver: false))
        #expect(subscription.recovery(from: .connection("reset")) == .resubscribe(startOver: false))
    }
}
