import Foundation
import ListDiff
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Scrapes a server's `GET /metrics` on a thread of its own, every `interval`, as Prometheus would
/// (far more often than Prometheus does), until stopped: each scrape's round-trip time and size.
final class MetricsScraper: Sendable {
    private struct State {
        var stopped = false
        var times: [Double] = []
        var bytes = 0
        var failures = 0
    }

    private let state = Locked(State())
    private let done = DispatchSemaphore(value: 0)

    /// Starts scraping `http://HOST:PORT/metrics` for the server whose WebSocket is `webSocketURL`.
    init(webSocketURL: String, interval: Duration) throws {
        guard let base = URL(string: webSocketURL.replacingOccurrences(of: "ws://", with: "http://")),
              let url = URL(string: "/metrics", relativeTo: base) else { throw BenchFailure("metrics: bad URL \(webSocketURL)") }
        let thread = Thread { [self] in
            let session = URLSession(configuration: .ephemeral)
            let clock = ContinuousClock()
            while !state.withLock({ $0.stopped }) {
                let start = clock.now
                let finished = DispatchSemaphore(value: 0)
                // Written by the completion handler before it signals, read after the wait: the
                // semaphore orders the two.
                nonisolated(unsafe) var received: Data?
                let task = session.dataTask(with: url) { data, _, _ in
                    received = data
                    finished.signal()
                }
                task.resume()
                finished.wait()
                let milliseconds = Stopwatch.milliseconds(start.duration(to: clock.now))
                state.withLock { state in
                    if let received, !received.isEmpty {
                        state.times.append(milliseconds)
                        state.bytes = received.count
                    } else {
                        state.failures += 1
                    }
                }
                Thread.sleep(forTimeInterval: Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18)
            }
            session.invalidateAndCancel()
            done.signal()
        }
        thread.name = "livelist.bench.scraper"
        thread.start()
    }

    /// Stops after the scrape under way; every scrape's time in ms, the last one's bytes, and the
    /// scrapes that failed.
    func stop() -> (times: [Double], bytes: Int, failures: Int) {
        state.withLock { $0.stopped = true }
        done.wait()
        return state.withLock { ($0.times, $0.bytes, $0.failures) }
    }
}
