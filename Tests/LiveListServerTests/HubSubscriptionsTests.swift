import ListTesting
import Testing
@testable import LiveListServer

/// A hub's subscriptions and their grouping for sending, without I/O.
@Suite("Hub subscriptions")
struct HubSubscriptionsTests {
    final class Member {
        let name: Int
        init(_ name: Int) { self.name = name }
    }

    /// The grouping made from scratch, as names: window → sub → sorted member names.
    static func grouped(_ model: [Int: (sub: Int, window: Range<Int>)]) -> [Range<Int>: [Int: [Int]]] {
        var groups: [Range<Int>: [Int: [Int]]] = [:]
        for (name, entry) in model { groups[entry.window, default: [:]][entry.sub, default: []].append(name) }
        return groups.mapValues { $0.mapValues { $0.sorted() } }
    }

    static func names(_ subscriptions: HubSubscriptions<Member>) -> [Range<Int>: [Int: [Int]]] {
        subscriptions.groups.mapValues { $0.mapValues { $0.values.map(\.name).sorted() } }
    }

    @Test("a moved window leaves its old group; an emptied group goes")
    func movesAndEmptiedGroups() {
        let a = Member(1), b = Member(2)
        var subscriptions = HubSubscriptions<Member>()
        subscriptions.set(a, sub: 1, window: 0..<10)
        subscriptions.set(b, sub: 1, window: 0..<10)
        #expect(Self.names(subscriptions) == [0..<10: [1: [1, 2]]])
        subscriptions.set(a, sub: 1, window: 5..<15)
        #expect(Self.names(subscriptions) == [0..<10: [1: [2]], 5..<15: [1: [1]]])
        subscriptions.remove(ObjectIdentifier(b))
        #expect(Self.names(subscriptions) == [5..<15: [1: [1]]], "no empty group is kept for 0..<10")
        #expect(subscriptions[ObjectIdentifier(a)]?.window == 5..<15)
        #expect(subscriptions.count == 1)
        let removed = subscriptions.removeAll()
        #expect(removed.map(\.subscriber.name) == [1])
        #expect(subscriptions.isEmpty && subscriptions.groups.isEmpty)
    }

    @Test("after any sequence of arrivals, window moves and departures, the groups are the subscriptions grouped afresh",
          arguments: 0..<5)
    func groupsEqualAFreshGrouping(run: Int) {
        var random = SeededRandomNumberGenerator(seed: SeededRandomNumberGenerator.testSeed("hub subscriptions \(run)"))
        let members = (0..<24).map(Member.init)
        let windows = [0..<50, 0..<100, 20..<70, 100..<200]
        var subscriptions = HubSubscriptions<Member>()
        var model: [Int: (sub: Int, window: Range<Int>)] = [:]
        for step in 0..<2_000 {
            let member = members[Int(random.next() % UInt64(members.count))]
            switch random.next() % 5 {
            case 0:
                subscriptions.remove(ObjectIdentifier(member))
                model[member.name] = nil
            case 1 where step % 97 == 0:
                _ = subscriptions.removeAll()
                model = [:]
            default:
                let sub = Int(random.next() % 3)
                let window = windows[Int(random.next() % UInt64(windows.count))]
                subscriptions.set(member, sub: sub, window: window)
                model[member.name] = (sub, window)
            }
            #expect(Self.names(subscriptions) == Self.grouped(model), "step \(step)")
            #expect(subscriptions.count == model.count)
            #expect(!subscriptions.groups.values.contains { $0.isEmpty || $0.values.contains { $0.isEmpty } })
            if Self.names(subscriptions) != Self.grouped(model) { return }
        }
    }
}
