import ArgumentParser
import Foundation
import LiveListCommands
import LiveListTools

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
    @Flag(help: "Leave glibc's allocator at its defaults (large blocks go back to the system after each run).")
    var defaultAllocator = false
    @Option(help: "Run only the benchmarks whose name starts with this prefix.") var filter: String?
    @Option(help: "The PostgreSQL server of the pg.* benchmarks (postgres://user:password@host:port/database; default: a throwaway cluster).")
    var postgres: String?
    @Option(help: .hidden) var child: String?
    @Option(help: .hidden) var childDatabase: String?

    func run() throws {
        if child == "external-writer", let childDatabase {
            // The other process of `live.external.1m`: commits what the parent asks for.
            try ExternalBenchmarks.writerLoop(database: childDatabase)
            return
        }
        if let child, child.hasPrefix("fanout:"), let childDatabase {
            // The load generator of `wire.fanout.*`: fanout:<subscribers>:<commit times file>, the URL.
            let parts = child.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, let subscribers = Int(parts[1]) else { throw InputError("bad fan-out child \(child)") }
            print(try WireFanout.child(url: childDatabase, subscribers: subscribers, commitsFile: parts[2]))
            return
        }
        if let child, child.hasPrefix("wire-memory:"), let childDatabase {
            // A run of `wire.memory.*` in a fresh process: what its kept versions cost.
            print(try MainActor.assumeIsolated { try WireMemory.child(child, database: childDatabase) })
            return
        }
        if let child, child.hasPrefix("mixed:") {
            // The load generator of `pg.mixed`: mixed:<specification file>.
            print(try PostgresMixedLoad.child(specification: String(child.dropFirst("mixed:".count))))
            return
        }
        if let child, child.hasPrefix("pg-"), let childDatabase {
            // A pg.* measurement in a fresh process: the database's URL.
            print(try waitFor { try await PostgresBenchmarks.child(child, url: childDatabase) })
            return
        }
        if let child, let childDatabase {
            // A measurement that needs a fresh process (and glibc's default allocator).
            print(try MainActor.assumeIsolated { try ChildMeasurements.measure(child, database: childDatabase) })
            return
        }
        let selected: (String) -> Bool = { name in filter.map { name.hasPrefix($0) } ?? true }
        let report: (BenchResult) -> Void = { result in
            FileHandle.standardOutput.write(Data(((json ? result.json.serialized : result.line) + "\n").utf8))
        }
        let allocations = allocationCounts()
        if !defaultAllocator { keepFreedMemory() }
        do {
            try DiffBenchmarks.run(quick: quick, baselines: !skipBaselines, selected: selected,
                                   allocations: { allocations[$0] }, report: report)
            let quick = quick, filter = filter
            // The CLI runs on the main thread; the presenter and the headless view are main-actor bound.
            try MainActor.assumeIsolated { try PresenterBenchmarks.run(quick: quick, filter: filter) }.forEach(report)
            try waitFor { try await LiveQueryBenchmarks.run(quick: quick, filter: filter) }.forEach(report)
            try waitFor { try await JoinBenchmarks.run(quick: quick, filter: filter) }.forEach(report)
            try waitFor { try await ExternalBenchmarks.run(quick: quick, filter: filter) }.forEach(report)
            try MainActor.assumeIsolated { try EndToEndBenchmarks.run(quick: quick, filter: filter) }.forEach(report)
            try MainActor.assumeIsolated { try WireBenchmarks.run(quick: quick, filter: filter) }.forEach(report)
            try MainActor.assumeIsolated { try MutationBenchmarks.run(quick: quick, filter: filter) }.forEach(report)
            try MainActor.assumeIsolated { try OfflineBenchmarks.run(quick: quick, filter: filter) }.forEach(report)
            let postgres = postgres
            do {
                try waitFor { try await PostgresBenchmarks.run(quick: quick, filter: filter, url: postgres) }.forEach(report)
            } catch let failure as BenchFailure where failure.description.hasPrefix("no PostgreSQL") {
                FileHandle.standardError.write(Data("livelist bench: skipped pg.*: \(failure.description)\n".utf8))
            }
            do {
                try waitFor { try await MutationFairness.runPostgres(quick: quick, filter: filter, url: postgres) }.forEach(report)
            } catch let failure as BenchFailure where failure.description.hasPrefix("no PostgreSQL") {
                FileHandle.standardError.write(Data("livelist bench: skipped pg.mutate.fairness: \(failure.description)\n".utf8))
            }
            if selected("web.update.100k") {
                do {
                    report(try WebBenchmark.run(quick: quick))
                } catch {
                    // The browser benchmark needs python3 with Selenium and Chromium; say so, do not fail the others.
                    FileHandle.standardError.write(Data("livelist bench: skipped \(error)\n".utf8))
                }
            }
        } catch let failure as BenchFailure {
            throw InputError("bench: \(failure.description)")
        }
    }

    /// A long-running app's heap is warm: memory freed by one diff is reused by the next. glibc by
    /// default hands blocks over 128 KiB back to the system on free, so every run of a large diff
    /// would page-fault all its memory in again (2,000 faults per 100k diff), and the figure would
    /// swing by 2x with the allocator's history. Keep freed memory in the heap; the faults that
    /// remain are reported per run, and `--default-allocator` measures without this.
    private func keepFreedMemory() {
        // mallopt is not in Swift's Glibc module (malloc.h is not part of it); look it up.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        let trimThreshold: Int32 = -1, mmapThreshold: Int32 = -3   // M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
        _ = mallopt(mmapThreshold, 512 << 20)
        _ = mallopt(trimThreshold, 1 << 30)
    }

    /// Allocation counts from the `livelist-allocations` helper built next to this executable,
    /// which links a malloc interposer that must stay out of the timed runs; none if it is absent.
    private func allocationCounts() -> [String: Int] {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let helper = executable.deletingLastPathComponent().appendingPathComponent("livelist-allocations")
        guard FileManager.default.isExecutableFile(atPath: helper.path) else { return [:] }
        let process = Process()
        process.executableURL = helper
        process.arguments = (quick ? ["--quick"] : []) + (filter.map { ["--filter", $0] } ?? [])
        let output = Pipe()
        process.standardOutput = output
        guard (try? process.run()) != nil else { return [:] }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        var counts: [String: Int] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let name = object["bench"] as? String, let count = object["allocations"] as? Int else { continue }
            counts[name] = count
        }
        return counts
    }
}
