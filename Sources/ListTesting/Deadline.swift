/// A wait in a test that did not end in time.
public struct DeadlineExceeded: Error, CustomStringConvertible {
    /// What was waited for.
    public var what: String
    /// The limit, in seconds.
    public var seconds: Double

    public var description: String { "\(what): not within \(seconds) s" }
}

/// Runs `body` on the main actor, throwing ``DeadlineExceeded`` when it has not returned within
/// `seconds` — whether or not `body` hears of cancellation (a continuation that is never resumed
/// does not), so a wait that never ends fails the test instead of hanging it. The limit guards
/// against a hang; it measures nothing.
@MainActor
public func within(_ what: String, seconds: Double = 30, _ body: @escaping @MainActor () async throws -> Void) async throws {
    let outcome = FirstOutcome()
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        outcome.continuation = continuation
        Task { @MainActor in
            do {
                try await body()
                outcome.finish(nil)
            } catch {
                outcome.finish(error)
            }
        }
        outcome.timer = Task { @MainActor in
            try? await Task.sleep(for: .seconds(seconds))
            outcome.finish(DeadlineExceeded(what: what, seconds: seconds))
        }
    }
}

/// Whichever of a body and its timer ends first ends the wait.
@MainActor
private final class FirstOutcome {
    var continuation: CheckedContinuation<Void, any Error>?
    var timer: Task<Void, Never>?

    func finish(_ error: (any Error)?) {
        guard let continuation else { return }
        self.continuation = nil
        timer?.cancel()
        if let error { continuation.resume(throwing: error) } else { continuation.resume() }
    }
}
