import Foundation
import LiveListWire

/// One benchmark's figures, printed as a table row or as one JSON object per line.
public struct BenchResult: Sendable {
    public var name: String
    public var medianMilliseconds: Double
    public var runs: Int
    public var baseline: String?
    public var baselineMedianMilliseconds: Double?
    public var extra: [JSONValue.Member] = []
    /// Lines printed under the table row (not in the JSON): a budget's verdict.
    public var notes: [String] = []

    public init(name: String, medianMilliseconds: Double, runs: Int) {
        self.name = name
        self.medianMilliseconds = medianMilliseconds
        self.runs = runs
    }

    public mutating func add(_ key: String, _ value: JSONValue) {
        extra.append(JSONValue.Member(key: key, value: value))
    }

    public var json: JSONValue {
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
        return .object(members + extra)
    }

    public var line: String {
        var text = "\(name.padding(toLength: 24, withPad: " ", startingAt: 0)) median \(Self.format(medianMilliseconds)) ms (\(runs) runs)"
        if let baseline, let baselineMedianMilliseconds {
            text += "; \(baseline) \(Self.format(baselineMedianMilliseconds)) ms, \(Self.format(baselineMedianMilliseconds / medianMilliseconds))x"
        }
        for member in extra { text += "; \(member.key) \(member.value.serialized)" }
        for note in notes { text += "\n    " + note }
        return text
    }

    public static func rounded(_ value: Double) -> Double { (value * 10_000).rounded() / 10_000 }

    static func format(_ value: Double) -> String {
        value >= 100 ? String(Int(value.rounded())) : String(format: "%.3f", value)
    }
}
