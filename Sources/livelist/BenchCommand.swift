import ArgumentParser
import Foundation

/// `livelist bench [--json] [--quick]`: the performance figures, with baselines measured in the
/// same run. Build with `-c release`; debug figures mean nothing.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run the benchmarks (medians, with baselines measured in the same run)."
    )

    @Flag(help: "Print one JSON object per benchmark and line.") var json = false
    @Flag(help: "Run a smaller set that finishes within seconds.") var quick = false
    @Flag(help: "Skip the baselines (for profiling).") var skipBaselines = false
    @Option(help: "Run only the benchmarks whose name starts with this prefix.") var filter: String?

    func run() throws {
        let selected: (String) -> Bool = { name in filter.map { name.hasPrefix($0) } ?? true }
        let report: (BenchResult) -> Void = { result in
            FileHandle.standardOutput.write(Data(((json ? result.json.serialized : result.line) + "\n").utf8))
        }
        try DiffBenchmarks.run(quick: quick, baselines: !skipBaselines, selected: selected, report: report)
    }
}
