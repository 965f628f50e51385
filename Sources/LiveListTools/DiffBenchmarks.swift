import Foundation
import ListDiff
import LiveListWire

/// `diff.*`: the sectioned diff plus staging, against Swift's `CollectionDifference` with
/// `inferringMoves()` measured in the same run.
public enum DiffBenchmarks {
    static let baselineName = "CollectionDifference.inferringMoves"

    /// One benchmark: how to build its workload, and how often to run it and its baseline.
    public struct Case: Sendable {
        public let name: String
        let runs: (quick: Int, full: Int)
        let baselineRuns: (quick: Int, full: Int)
        let isQuick: Bool
        let prepare: @Sendable () -> Prepared
    }

    /// A built workload, type-erased so UUID and integer cases share one driver.
    struct Prepared {
        let diff: () -> Void
        let baseline: () -> Void
        let verify: () throws -> [JSONValue.Member]
    }

    public static let cases: [Case] = [
        Case(name: "diff.uuid.5k", runs: (31, 201), baselineRuns: (3, 11), isQuick: true) {
            prepared(DiffWorkload(count: 5_000, deleted: 1_000, inserted: 1_000, moved: 200, seed: 5) { UUID(uuid: randomUUIDBytes(&$0)) })
        },
        Case(name: "diff.uuid.100k", runs: (5, 31), baselineRuns: (0, 1), isQuick: true) {
            prepared(DiffWorkload(count: 100_000, deleted: 10_000, inserted: 10_000, moved: 2_000, seed: 100) { UUID(uuid: randomUUIDBytes(&$0)) })
        },
        Case(name: "diff.int.1m", runs: (0, 7), baselineRuns: (0, 0), isQuick: false) {
            prepared(DiffWorkload(count: 1_000_000, deleted: 100_000, inserted: 100_000, moved: 20_000, seed: 1_000) { Int64(bitPattern: $0.next()) })
        },
    ]

    static func prepared<ID: BitwiseIdentifier & Sendable>(_ workload: DiffWorkload<ID>) -> Prepared {
        let (old, new) = workload.snapshots
        return Prepared(
            // The stages are read: a list view applies them, and staging is lazy (like for like with the eager staging before).
            diff: { blackHole(Changeset(from: old, to: new).stages) },
            baseline: { blackHole(workload.new.difference(from: workload.old).inferringMoves()) },
            verify: {
                // A fast wrong answer must not pass as a figure.
                let changeset = Changeset(from: old, to: new)
                let survivors = Set(workload.old).intersection(workload.new).count
                guard changeset.changes.itemDeletes.count == workload.old.count - survivors,
                      changeset.changes.itemInserts.count == workload.new.count - survivors,
                      changeset.stages.last?.snapshot.sections.first?.items.map(\.id) == workload.new else {
                    throw BenchFailure("the diff did not reproduce the workload")
                }
                return [
                    .init(key: "rows", value: .integer(Int64(workload.old.count))),
                    .init(key: "moves", value: .integer(Int64(changeset.changes.itemMoves.count))),
                    .init(key: "stages", value: .integer(Int64(changeset.stages.count))),
                ]
            }
        )
    }

    /// Times every selected case; `allocations` gives the count measured elsewhere, if any.
    public static func run(
        quick: Bool, baselines: Bool, selected: (String) -> Bool,
        allocations: (String) -> Int?, report: (BenchResult) -> Void
    ) throws {
        for benchCase in cases where selected(benchCase.name) && (benchCase.isQuick || !quick) {
            let prepared = benchCase.prepare()
            let facts = try prepared.verify()
            let runs = quick ? benchCase.runs.quick : benchCase.runs.full
            let faultsBefore = minorPageFaults()
            let median = Stopwatch.median(runs: runs, prepared.diff)
            let faultsPerRun = Double(minorPageFaults() - faultsBefore) / Double(runs + 1)
            var result = BenchResult(name: benchCase.name, medianMilliseconds: median, runs: runs)
            result.extra = facts
            result.add("page_faults_per_run", .double(faultsPerRun.rounded()))
            result.add("allocations", allocations(benchCase.name).map { .integer(Int64($0)) } ?? .null)
            let baselineRuns = baselines ? (quick ? benchCase.baselineRuns.quick : benchCase.baselineRuns.full) : 0
            if baselineRuns > 0 {
                result.baseline = baselineName
                result.baselineMedianMilliseconds = Stopwatch.median(runs: baselineRuns, warmUp: 0, prepared.baseline)
            }
            report(result)
        }
    }

    /// Counts the allocations of one diff of every selected case with `count`.
    public static func countAllocations(quick: Bool, selected: (String) -> Bool, count: (() -> Void) -> Int?) -> [(name: String, allocations: Int?)] {
        cases.filter { selected($0.name) && ($0.isQuick || !quick) }.map { benchCase in
            let prepared = benchCase.prepare()
            prepared.diff()
            return (benchCase.name, count(prepared.diff))
        }
    }

    static func randomUUIDBytes<R: RandomNumberGenerator>(_ random: inout R) -> uuid_t {
        let high = random.next(), low = random.next()
        func byte(_ word: UInt64, _ index: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: word >> (index * 8)) }
        return (byte(high, 0), byte(high, 1), byte(high, 2), byte(high, 3), byte(high, 4), byte(high, 5),
                byte(high, 6) & 0x0F | 0x40, byte(high, 7), byte(low, 0) & 0x3F | 0x80, byte(low, 1),
                byte(low, 2), byte(low, 3), byte(low, 4), byte(low, 5), byte(low, 6), byte(low, 7))
    }
}

/// A benchmark whose result failed its own check.
public struct BenchFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
