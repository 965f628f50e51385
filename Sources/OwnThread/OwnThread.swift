import Foundation

/// Runs `body` on a thread of its own and resumes with its result.
///
/// For blocking calls made from async code in the tests and the benchmarks — waiting for a
/// process to exit, `pg_ctl`, a socket read with a timeout. Swift's cooperative pool has as many
/// threads as the machine has cores (two here); a blocking call on one of them holds it, and two
/// at once stop every task of the process, the in-process servers' and engines' included, until
/// they return. A thread of its own blocks nobody.
public func onOwnThread<T: Sendable>(_ name: String = "livelist.blocking", _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.name = name
        thread.start()
    }
}

/// ``onOwnThread(_:_:)-swift.func`` for a body that cannot throw.
public func onOwnThread<T: Sendable>(_ name: String = "livelist.blocking", _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.name = name
        thread.start()
    }
}
