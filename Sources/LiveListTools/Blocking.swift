import Foundation

/// Runs async work from the synchronous command line and waits for it. The work must not need
/// the main thread (live queries and row caches run on GRDB's queues and the global executor);
/// main-actor work stays in the synchronous caller, which is the main thread.
public func waitFor<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do { box.result = .success(try await work()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    guard let result = box.result else { throw BenchFailure("an operation did not finish") }
    return try result.get()
}

/// Carries an async result to the thread that waits for it.
///
/// `@unchecked Sendable`: `result` is written once before the semaphore is signalled and read
/// after the wait returns, so the semaphore orders the two accesses.
private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
