import ListDiff
import Synchronization
import Testing
@testable import LiveListServer

@Suite("Looks for commits shared by the clients' syncs")
struct SharedLookTests {
    /// A look that takes a while and counts itself, numbering the states it returns.
    final class SlowLook: Sendable {
        let started = Mutex(0)

        func look() async throws -> ListStateID? {
            let number = started.withLock { count in
                count += 1
                return count
            }
            try await Task.sleep(for: .milliseconds(40))
            return ListStateID(source: 1, generation: UInt64(number))
        }
    }

    @Test("forty syncs at once cost two looks at most; every sync is served by a look that began after it came")
    func syncsShareLooks() async throws {
        let slow = SlowLook()
        let shared = SharedLook { try await slow.look() }
        let first = Task { try await shared.state() }
        // Let the first look begin; the rest arrive while it runs.
        while slow.started.withLock({ $0 }) == 0 { await Task.yield() }
        let states = try await withThrowingTaskGroup(of: ListStateID?.self) { group in
            for _ in 0..<40 { group.addTask { try await shared.state() } }
            var states: [ListStateID?] = []
            for try await state in group { states.append(state) }
            return states
        }
        #expect(try await first.value == ListStateID(source: 1, generation: 1))
        #expect(states.allSatisfy { $0 == ListStateID(source: 1, generation: 2) }, "a look that began before them serves none")
        #expect(await shared.looks == 2)
        // Quiet again: the next sync gets a look of its own.
        #expect(try await shared.state() == ListStateID(source: 1, generation: 3))
    }
}
