import LiveListServer
import LiveListWire
import Testing

/// The ledger's decision for a mutation, without a database.
@Suite("Mutation steps")
struct MutationStepTests {
    @Test("the next number runs; a used one is answered as the first time; a gap or a forgotten one is out of order")
    func steps() {
        let refusal = MutationRefusal.conflict("gone")
        #expect(MutationStep(id: 1, last: 0, refusal: nil) == .apply)
        #expect(MutationStep(id: 8, last: 7, refusal: nil) == .apply)
        #expect(MutationStep(id: 7, last: 7, refusal: nil) == .answer(.alreadyApplied))
        #expect(MutationStep(id: 3, last: 7, refusal: refusal) == .answer(.refused(refusal)))
        #expect(MutationStep(id: 9, last: 7, refusal: nil) == .outOfOrder(expected: 8))
        #expect(MutationStep(id: 2, last: 0, refusal: nil) == .outOfOrder(expected: 1))
        let last = 5_000 as Int64
        #expect(MutationStep(id: last - MutationStep.outcomesKept + 1, last: last, refusal: nil) == .answer(.alreadyApplied))
        #expect(MutationStep(id: last - MutationStep.outcomesKept, last: last, refusal: nil) == .outOfOrder(expected: last + 1))
    }

    @Test("refusals name their codes")
    func codes() {
        #expect(MutationRefusal.conflict("x").code == .conflict)
        #expect(MutationRefusal.failed("x").code == .mutationFailed)
        #expect(MutationRefusal(storedCode: "badArguments", message: "x").code == .badArguments)
        #expect(MutationRefusal(storedCode: "nonsense", message: "x").code == .mutationFailed)
    }

    @Test("a refusal's message is cut to 500 Unicode scalars, whatever they combine into")
    func messageLength() {
        // 600 characters of two scalars each, and 600 of one: both over 500 scalars, cut to 499 and an ellipsis.
        for long in [String(repeating: "e\u{301}", count: 600), String(repeating: "😀", count: 600)] {
            let message = MutationRefusal(code: .conflict, message: long).message
            #expect(message.unicodeScalars.count == MutationRefusal.maximumMessageLength && message.hasSuffix("…"))
            #expect(long.unicodeScalars.starts(with: message.unicodeScalars.dropLast()))
        }
        let exact = String(repeating: "e\u{301}", count: 250)
        #expect(MutationRefusal(code: .conflict, message: exact).message == exact)
    }
}
