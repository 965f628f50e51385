import ArgumentParser
import Foundation
import ListDiff
import LiveListTools
import ListTesting

/// `livelist demo`: a live list fed by a changing inbox. Until the SQLite-backed demo lands the
/// data lives in memory; the pipeline (diff → stages → a strict headless list view) is the real one.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run a live list over a changing inbox and report every batch.",
        discussion: "Ends with: demo: B batches, C changes, I inconsistencies, p50 X ms, p99 Y ms (exit 0 only when I is 0 and the list equals a fresh query)."
    )

    @Option(help: "Conversations in the generated inbox.") var rows = 20_000
    @Option(help: "Seed of the generated data and of the writer.") var seed: UInt64 = 1
    @Option(help: "Seconds to run.") var duration: Double = 5
    @Option(help: "Changes the writer makes per second.") var writesPerSecond = 50
    @Flag(help: "Print one line per batch instead of drawing a screen.") var headless = false

    func validate() throws {
        guard rows >= 0 else { throw ValidationError("--rows must not be negative") }
        guard duration > 0 else { throw ValidationError("--duration must be positive") }
        guard writesPerSecond > 0 else { throw ValidationError("--writes-per-second must be positive") }
    }

    func run() throws {
        // The CLI's synchronous entry point runs on the main thread; the view is main-actor bound.
        try MainActor.assumeIsolated { try runOnMainActor() }
    }

    @MainActor
    private func runOnMainActor() throws {
        if !headless {
            print("livelist demo: the interactive terminal screen arrives with the SQLite demo; running headless.")
        }
        var model = InboxModel(rows: rows, seed: seed)
        let dataSource = SnapshotDataSource(model.snapshot())
        let view = HeadlessListView(dataSource: dataSource, viewportRows: 40)
        view.layoutIfNeeded()
        let ticksPerSecond = 10.0
        let changesPerTick = max(1, Int((Double(writesPerSecond) / ticksPerSecond).rounded()))
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: .milliseconds(Int(duration * 1000)))
        var latencies: [Double] = []
        var batches = 0, changes = 0, inconsistencies = 0, tick = 0
        while clock.now < end {
            tick += 1
            // Every tenth tick is a burst: many changes in one transaction.
            let touched = model.write(count: tick % 10 == 0 ? changesPerTick * 20 : changesPerTick)
            let started = clock.now
            let target = model.snapshot()
            let changeset = Changeset(from: dataSource.snapshot, to: target)
            do {
                try view.apply(changeset, to: dataSource)
                if !view.staleCells().isEmpty { inconsistencies += 1 }
            } catch {
                inconsistencies += 1
                print("batch \(batches + 1): inconsistency: \(error)")
                dataSource.snapshot = target
                try? view.reloadData()
                view.layoutIfNeeded()
            }
            let latency = Stopwatch.milliseconds(started.duration(to: clock.now))
            latencies.append(latency)
            if !changeset.isEmpty {
                batches += 1
                changes += changeset.changes.count
                let c = changeset.changes
                print("batch \(batches): \(touched) writes -> \(c.itemInserts.count) inserted, \(c.itemDeletes.count) deleted, \(c.itemMoves.count) moved, \(c.itemReloads.count) reloaded, \(c.sectionInserts.count + c.sectionDeletes.count) section changes in \(changeset.stages.count) stages, \(String(format: "%.2f", latency)) ms")
            }
            Thread.sleep(forTimeInterval: 1 / ticksPerSecond)
        }
        if !view.staleCells().isEmpty || !dataSource.snapshot.isContentEqual(to: model.snapshot()) { inconsistencies += 1 }
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        print("demo: \(batches) batches, \(changes) changes, \(inconsistencies) inconsistencies, p50 \(String(format: "%.2f", percentile(0.5))) ms, p99 \(String(format: "%.2f", percentile(0.99))) ms")
        if inconsistencies > 0 { throw ExitCode(1) }
    }
}
