import ListDiff
import Testing
@testable import LiveQueryPostgres

/// What the results one query delivers stand for, as a value, without PostgreSQL: each delivery
/// says what its result stands for, the tap records it there, and the delivery's end says what it
/// came to — a new result, or the one shown standing again.
@Suite("Positioned deliveries")
struct PositionedDeliveriesTests {
    static let a = ListStateID(source: 1, generation: 1)
    static let b = ListStateID(source: 1, generation: 2)

    /// Deliveries whose current result is `a`, read whole from 10.
    static func following() -> PositionedDeliveries {
        var deliveries = PositionedDeliveries()
        deliveries.positions.read(a, from: 10)
        return deliveries
    }

    @Test("a step that delivers a result records it at the step's last commit, and says so at its end")
    func stepDelivered() {
        var deliveries = Self.following()
        deliveries.open(.step(first: 20, last: 30))
        #expect(deliveries.isDelivering)
        #expect(deliveries.delivered(Self.b) == 30)
        #expect(deliveries.close() == .delivered(at: 30))
        #expect(!deliveries.isDelivering)
        #expect(deliveries.positions.position(of: Self.b) == 30)
        #expect(deliveries.positions.holds(Self.a, at: 19, followed: 19), "the result before held until the step's first commit")
        #expect(!deliveries.positions.holds(Self.a, at: 20, followed: 30))
    }

    @Test("a step that delivers nothing leaves the current result standing at its last commit")
    func stepUnchanged() {
        var deliveries = Self.following()
        deliveries.open(.step(first: 20, last: 30))
        #expect(deliveries.close() == .unchanged(through: 30))
        #expect(deliveries.positions.holds(Self.a, at: 30, followed: 30))
        #expect(!deliveries.positions.holds(Self.a, at: 25, followed: 30), "inside the step nothing is known")
    }

    @Test("a step with no current result known delivers nothing and stands nowhere")
    func stepWithoutCurrent() {
        var deliveries = PositionedDeliveries()
        deliveries.open(.step(first: 20, last: 30))
        #expect(deliveries.close() == .nothing)
        #expect(deliveries.positions.current == nil)
    }

    @Test("a result read whole holds from where the read holds, delivered or shown again")
    func readWhole() {
        var deliveries = Self.following()
        deliveries.positions.failed(heldThrough: 15)
        deliveries.open(.read(from: 40), shown: Self.a)
        #expect(deliveries.close() == .unchanged(through: 40), "it came back as the one shown")
        #expect(deliveries.positions.holds(Self.a, at: 40, followed: 40))
        #expect(!deliveries.positions.holds(Self.a, at: 20, followed: 40), "not between the failure and the read")

        deliveries.open(.read(from: 50), shown: Self.a)
        #expect(deliveries.delivered(Self.b) == 50)
        #expect(deliveries.close() == .delivered(at: 50))
        #expect(deliveries.positions.position(of: Self.b) == 50)

        deliveries.open(.read(from: 60))
        #expect(deliveries.close() == .nothing, "nothing shown to stand again (a first fetch)")
    }

    @Test("outside a delivery the tap records nothing; a result without a state is delivered at no position")
    func outsideDelivery() {
        var deliveries = Self.following()
        #expect(deliveries.delivered(Self.b) == nil)
        #expect(deliveries.positions.position(of: Self.b) == nil)
        #expect(deliveries.close() == .nothing)

        deliveries.open(.step(first: 20, last: 30))
        #expect(deliveries.delivered(nil) == nil)
        #expect(deliveries.close() == .delivered(at: nil), "a result came, so the one before does not stand again")
        #expect(deliveries.positions.latest == 10, "and no step was recorded for it")
    }

    @Test("a delivery's end ends it: a later result is not taken for it")
    func closeEnds() {
        var deliveries = Self.following()
        deliveries.open(.step(first: 20, last: 30))
        _ = deliveries.close()
        #expect(deliveries.delivered(Self.b) == nil)
        #expect(deliveries.positions.current == Self.a)
    }
}
