import Testing
@testable import ListDiff

@Suite struct LockedTests {
    @Test func concurrentIncrementsEndExact() async {
        let counter = Locked(0)
        let tasks = 64, increments = 1_000
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    for _ in 0..<increments { counter.withLock { $0 += 1 } }
                }
            }
        }
        #expect(counter.withLock { $0 } == tasks * increments)
    }

    @Test func withLockReturnsAndRethrows() {
        struct Failure: Error {}
        let box = Locked([1, 2])
        let count = box.withLock { values -> Int in
            values.append(3)
            return values.count
        }
        #expect(count == 3)
        #expect(throws: Failure.self) {
            try box.withLock { values in
                values.append(4)
                throw Failure()
            }
        }
        #expect(box.withLock { $0 } == [1, 2, 3, 4])
    }
}
