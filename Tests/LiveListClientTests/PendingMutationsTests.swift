@testable import LiveListClient
import LiveListWire
import Testing

/// The mutator's decisions: numbering, what a reconnect sends again, what each answer does.
@Suite("Pending mutations")
struct PendingMutationsTests {
    @Test("mutations are numbered in order and all sent again after a reconnect until answered")
    func numbering() {
        var pending = PendingMutations<String>(client: "c", nextID: 7)
        let first = pending.add(name: "a", arguments: [:], waiter: "first")
        let second = pending.add(name: "b", arguments: ["x": .integer(1)], waiter: "second")
        #expect(first.id == 7 && second.id == 8 && pending.nextID == 9)
        #expect(pending.toResend == [first, second])
        guard case let .finish(waiter?, .success) = pending.receive(WireMutated(client: "c", id: 8, versions: [:], duplicate: true)) else {
            Issue.record("8 was not finished")
            return
        }
        #expect(waiter == "second")
        #expect(pending.toResend == [first])
        // Another client's answer, or a second answer, changes nothing.
        guard case .ignore = pending.receive(WireMutated(client: "d", id: 7, versions: [:], duplicate: false)),
              case .ignore = pending.receive(WireMutated(client: "c", id: 8, versions: [:], duplicate: false)) else {
            Issue.record("a foreign or late answer was taken")
            return
        }
        #expect(pending.entries.count == 1)
    }

    @Test("mutationUnavailable sends all again; out of order behind it waits; every other error ends the mutation")
    func errors() {
        var pending = PendingMutations<String>(client: "c", nextID: 1)
        _ = pending.add(name: "a", arguments: [:], waiter: "w1")
        _ = pending.add(name: "b", arguments: [:], waiter: "w2")
        let busy = WireError(sub: nil, code: .mutationUnavailable, message: "busy", mutation: WireMutationID(client: "c", id: 1))
        let echo = WireError(sub: nil, code: .mutationOutOfOrder, message: "1 is expected", mutation: WireMutationID(client: "c", id: 2))
        guard case .resendAll = pending.receive(busy), case .ignore = pending.receive(echo) else {
            Issue.record("not sent again")
            return
        }
        #expect(pending.toResend.map(\.id) == [1, 2])
        let conflict = WireError(sub: nil, code: .conflict, message: "gone", mutation: WireMutationID(client: "c", id: 1))
        guard case let .finish(waiter?, .failure(error)) = pending.receive(conflict) else {
            Issue.record("not ended")
            return
        }
        #expect(waiter == "w1" && error.code == .conflict && pending.toResend.map(\.id) == [2])
        // Out of order with nothing before it: a real gap (the number kept was wrong), told.
        guard case let .finish(gapWaiter?, .failure) = pending.receive(echo) else {
            Issue.record("a gap was not told")
            return
        }
        #expect(gapWaiter == "w2" && pending.entries.isEmpty)
        guard case .ignore = pending.receive(WireError(sub: 3, code: .badWindow, message: "x")) else {
            Issue.record("a subscription's error was taken")
            return
        }
    }

    @Test("a stop lets go of the callers but keeps the mutations; mutations kept from a launch come back in order, numbering after them")
    func keptAcrossStopsAndLaunches() {
        var pending = PendingMutations<String>(client: "c", nextID: 1)
        _ = pending.add(name: "a", arguments: [:], waiter: "w1")
        _ = pending.add(name: "b", arguments: [:], waiter: "w2")
        #expect(pending.releaseWaiters() == ["w1", "w2"])
        #expect(pending.toResend.map(\.id) == [1, 2])
        guard case .finish(nil, .success) = pending.receive(WireMutated(client: "c", id: 1, versions: [:], duplicate: true)) else {
            Issue.record("an answer for a mutation no one waits for was not taken")
            return
        }
        let kept = pending.toResend + [WireMutation(client: "other", id: 9, name: "x")]
        var relaunched = PendingMutations<String>(client: "c", nextID: 1, restoring: kept.reversed())
        #expect(relaunched.toResend.map(\.id) == [2] && relaunched.nextID == 3)
        #expect(relaunched.add(name: "c", arguments: [:], waiter: "w3").id == 3)
    }
}
