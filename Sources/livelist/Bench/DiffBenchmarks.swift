import Foundation
import ListDiff

/// `diff.*`: the sectioned diff plus staging, against Swift's `CollectionDifference` with
/// `inferringMoves()` measured in the same run.
enum DiffBenchmarks {
    static let baselineName = "CollectionDifference.inferringMoves"

    static func run(quick: Bool, baselines: Bool, selected: (String) -> Bool, report: (BenchResult) -> Void) throws {
        if selected("diff.uuid.5k") {
        let small = DiffWorkload(count: 5_000, deleted: 1_000, inserted: 1_000, moved: 200, seed: 5) { random in
            UUID(uuid: randomUUIDBytes(&random))
        }
        report(try measure("diff.uuid.5k", small, runs: quick ? 31 : 201, baselineRuns: !baselines ? 0 : quick ? 3 : 11))
        }
        if selected("diff.uuid.100k") {
        let large = DiffWorkload(count: 100_000, deleted: 10_000, inserted: 10_000, moved: 2_000, seed: 100) { random in
            UUID(uuid: randomUUIDBytes(&random))
        }
        report(try measure("diff.uuid.100k", large, runs: quick ? 5 : 31, baselineRuns: !baselines || quick ? 0 : 1))
        }
        guard !quick, selected("diff.int.1m") else { return }
        var nextID: Int64 = 0
        let huge = DiffWorkload(count: 1_000_000, deleted: 100_000, inserted: 100_000, moved: 20_000, seed: 1_000) { _ in
            nextID += 1
            return nextID
        }
        report(try measure("diff.int.1m", huge, runs: 7, baselineRuns: 0))
    }

    /// Times `Changeset(from:to:)` on the workload and checks the result is what the workload made,
    /// so a fast wrong answer cannot pass as a figure.
    static func measure<ID: Hashable & Sendable>(_ name: String, _ workload: DiffWorkload<ID>, runs: Int, baselineRuns: Int) throws -> BenchResult {
        let (old, new) = workload.snapshots
        let changeset = Changeset(from: old, to: new)
        let deleted = workload.old.count - Set(workload.old).intersection(workload.new).count
        guard changeset.changes.itemDeletes.count == deleted,
              changeset.changes.itemInserts.count == workload.new.count - (workload.old.count - deleted),
              changeset.stages.last?.snapshot.sections.first?.items.map(\.id) == workload.new else {
            throw InputError("\(name): the diff did not reproduce the workload")
        }
        let faultsBefore = minorPageFaults()
        let median = Stopwatch.median(runs: runs) { blackHole(Changeset(from: old, to: new)) }
        let faultsPerRun = Double(minorPageFaults() - faultsBefore) / Double(runs + 1)
        var result = BenchResult(name: name, medianMilliseconds: median, runs: runs)
        result.extra = [
            ("rows", .integer(Int64(workload.old.count))),
            ("moves", .integer(Int64(changeset.changes.itemMoves.count))),
            ("stages", .integer(Int64(changeset.stages.count))),
            ("page_faults_per_run", .double(faultsPerRun.rounded())),
        ]
        if baselineRuns > 0 {
            result.baseline = baselineName
            result.baselineMedianMilliseconds = Stopwatch.median(runs: baselineRuns, warmUp: 0) {
                blackHole(workload.new.difference(from: workload.old).inferringMoves())
            }
        }
        return result
    }

    static func randomUUIDBytes<R: RandomNumberGenerator>(_ random: inout R) -> uuid_t {
        let high = random.next(), low = random.next()
        func byte(_ word: UInt64, _ index: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: word >> (index * 8)) }
        return (byte(high, 0), byte(high, 1), byte(high, 2), byte(high, 3), byte(high, 4), byte(high, 5),
                byte(high, 6) & 0x0F | 0x40, byte(high, 7), byte(low, 0) & 0x3F | 0x80, byte(low, 1),
                byte(low, 2), byte(low, 3), byte(low, 4), byte(low, 5), byte(low, 6), byte(low, 7))
    }
}
