import Foundation

/// Runs async work from the synchronous command line and waits for it. The work must not need
/// the main thread (live queries and row caches run on GRDB's queues and the global executor).
func waitFor<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        do { box.result = .success(try await work()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    guard let result = box.result else { throw InputError("an operation did not finish") }
    return try result.get()
}

/// Carries an async result to the thread that waits for it; the semaphore orders the accesses.
private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
