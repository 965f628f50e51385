/// How long a client waits before it connects again, after `attempt` failures in a row: 100 ms,
/// doubling up to 5 s, plus up to a quarter more at random, so that the clients of a server that
/// went away do not all come back at the same instant.
enum Reconnect {
    static func delay(attempt: Int) -> Duration {
        let milliseconds = min(5_000, 50 * (1 << min(attempt, 7)))
        return .milliseconds(milliseconds + Int.random(in: 0...milliseconds / 4))
    }

    /// Sleeps for ``delay(attempt:)``; returns early when the task is cancelled (its caller looks).
    static func pause(attempt: Int) async {
        do {
            try await Task.sleep(for: delay(attempt: attempt))
        } catch {
            return
        }
    }
}
