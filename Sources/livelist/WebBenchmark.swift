import Foundation
import LiveListTools
import LiveListWire

/// `web.update.100k`: run by `Scripts/web-bench.py` (headless Chromium through Selenium, the page's
/// own clock), which prints the result as one JSON line; this relays it into `livelist bench`.
enum WebBenchmark {
    /// The script of the package this executable was built in (`.build/…/release/livelist`: a few
    /// folders up).
    static var script: URL {
        var folder = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 {
            let candidate = folder.appendingPathComponent("Scripts/web-bench.py")
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
            folder = folder.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: "Scripts/web-bench.py")
    }

    /// The result, or why it could not run (no script, no python3, Selenium or Chromium).
    static func run(quick: Bool) throws(BenchFailure) -> BenchResult {
        let object = try measure(quick: quick).get()
        func number(_ key: String) -> Double { (object[key] as? NSNumber)?.doubleValue ?? .nan }
        var result = BenchResult(name: "web.update.100k", medianMilliseconds: number("median_ms"), runs: Int(number("runs")))
        result.baseline = object["baseline"] as? String
        result.baselineMedianMilliseconds = number("baseline_median_ms")
        for key in ["p99_ms", "baseline_p99_ms", "bytes", "baseline_bytes", "frames_over_50ms", "rows"] {
            result.add(key, .double(BenchResult.rounded(number(key))))
        }
        if let clock = object["clock"] as? String { result.add("clock", .string(clock)) }
        return result
    }

    static func measure(quick: Bool) -> Result<[String: Any], BenchFailure> {
        guard FileManager.default.fileExists(atPath: script.path) else { return .failure(BenchFailure("web.update.100k: no \(script.path)")) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path] + (quick ? ["--quick"] : [])
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do {
            try process.run()
        } catch {
            return .failure(BenchFailure("web.update.100k: cannot run python3: \(error)"))
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let problems = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        guard process.terminationStatus == 0, let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
            let reason = String(decoding: problems, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? "exit status \(process.terminationStatus)"
            return .failure(BenchFailure("web.update.100k: \(reason)"))
        }
        return .success(object)
    }
}
