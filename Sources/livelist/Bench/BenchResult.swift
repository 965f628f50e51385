/// One benchmark's figures, printed as a table row or as one JSON object per line.
struct BenchResult {
    var name: String
    var medianMilliseconds: Double
    var runs: Int
    var baseline: String?
    var baselineMedianMilliseconds: Double?
    var extra: [(key: String, value: JSONValue)] = []

    var json: JSONValue {
        var members: [JSONValue.Member] = [
            .init(key: "bench", value: .string(name)),
            .init(key: "median_ms", value: .double(Self.rounded(medianMilliseconds))),
            .init(key: "runs", value: .integer(Int64(runs))),
        ]
        if let baseline, let baselineMedianMilliseconds {
            members.append(.init(key: "baseline", value: .string(baseline)))
            members.append(.init(key: "baseline_median_ms", value: .double(Self.rounded(baselineMedianMilliseconds))))
            members.append(.init(key: "speedup", value: .double(Self.rounded(baselineMedianMilliseconds / medianMilliseconds))))
        }
        for (key, value) in extra { members.append(.init(key: key, value: value)) }
        return .object(members)
    }

    var line: String {
        var text = "\(name.padding(toLength: 24, withPad: " ", startingAt: 0)) median \(Self.format(medianMilliseconds)) ms (\(runs) runs)"
        if let baseline, let baselineMedianMilliseconds {
            text += "; \(baseline) \(Self.format(baselineMedianMilliseconds)) ms, \(Self.format(baselineMedianMilliseconds / medianMilliseconds))x"
        }
        for (key, value) in extra { text += "; \(key) \(value.serialized)" }
        return text
    }

    static func rounded(_ value: Double) -> Double { (value * 10_000).rounded() / 10_000 }

    static func format(_ value: Double) -> String {
        value >= 100 ? String(Int(value.rounded())) : String(format: "%.3f", value)
    }
}
