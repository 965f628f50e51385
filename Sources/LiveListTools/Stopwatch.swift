import Foundation

/// Times repeated runs of a closure and reports the median, so one slow run (a page fault, the
/// other core busy) does not move the figure.
public enum Stopwatch {
    public static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    /// The median of `runs` timed runs after `warmUp` untimed ones. `prepare` runs untimed before
    /// each run and hands its result to `body`.
    public static func median<Input>(
        runs: Int, warmUp: Int = 1,
        prepare: () -> Input,
        _ body: (Input) -> Void
    ) -> Double {
        let clock = ContinuousClock()
        for _ in 0..<warmUp { body(prepare()) }
        var samples: [Double] = []
        samples.reserveCapacity(runs)
        for _ in 0..<runs {
            let input = prepare()
            let elapsed = clock.measure { body(input) }
            samples.append(milliseconds(elapsed))
        }
        samples.sort()
        return samples.count % 2 == 1
            ? samples[samples.count / 2]
            : (samples[samples.count / 2 - 1] + samples[samples.count / 2]) / 2
    }

    public static func median(runs: Int, warmUp: Int = 1, _ body: () -> Void) -> Double {
        median(runs: runs, warmUp: warmUp, prepare: { () }, { _ in body() })
    }
}

/// Minor page faults of this process so far: large allocations that go back to the system
/// between runs show up here, and they cost as much as the work in small benchmarks.
public func minorPageFaults() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_minflt
}

/// Keeps a value alive and opaque so the optimizer cannot drop the work that produced it.
@inline(never)
public func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
