import ListTesting
@testable import LiveQueryPostgres
import Testing

/// The cutting of a round's commits into steps, against an oracle that knows every row's value
/// after every commit: each step's result, made from the round's one read as the engine makes it,
/// equals the true state after the step's last commit.
@Suite struct CommitStepsTests {
    typealias Commit = CommitSteps.Commit

    @Test("commits that touch other rows are each a step; a row touched twice keeps its commits together")
    func examples() {
        func commit(_ end: UInt64, _ rows: Set<Int64>, joined: Bool = false) -> Commit { Commit(end: end, rows: rows, touchesJoinedTable: joined) }
        #expect(CommitSteps.partition([], refetches: false) == [])
        #expect(CommitSteps.partition([commit(1, [1])], refetches: false) == [0..<1])
        #expect(CommitSteps.partition([commit(1, [1]), commit(2, [2]), commit(3, [3])], refetches: false) == [0..<1, 1..<2, 2..<3])
        #expect(CommitSteps.partition([commit(1, [1]), commit(2, [2]), commit(3, [1])], refetches: false) == [0..<3])
        #expect(CommitSteps.partition([commit(1, [1]), commit(2, [1]), commit(3, [3])], refetches: false) == [0..<2, 2..<3])
        #expect(CommitSteps.partition([commit(1, [])], refetches: false) == [0..<1])
        // After a joined table's change nothing is cut: a later commit may have moved a row's link.
        #expect(CommitSteps.partition([commit(1, [1]), commit(2, [5], joined: true), commit(3, [3])], refetches: false) == [0..<1, 1..<3])
        #expect(CommitSteps.partition([commit(1, [1]), commit(2, [2])], refetches: true) == [0..<2])
        let steps = [0..<2, 2..<3]
        #expect(CommitSteps.rows(of: steps, in: [commit(1, [1, 2]), commit(2, [1]), commit(3, [3, 2])]) == [[1], [2, 3]])
    }

    @Test("every step's result, from one read after the round, is the state after its last commit (random rounds, seed printed)")
    func oracle() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("commit steps seed \(seed)")
        var random = SeededRandomNumberGenerator(seed: seed)
        for _ in 0..<2_000 {
            let rowCount = Int64.random(in: 1...12, using: &random)
            var state: [Int64: Int] = [:]   // the database: row → value (absent: not in the result)
            for row in 0..<rowCount where Bool.random(using: &random) { state[row] = Int.random(in: 0...3, using: &random) }
            let start = state
            var truth: [[Int64: Int]] = []
            var commits: [Commit] = []
            for index in 0..<Int.random(in: 1...6, using: &random) {
                var rows: Set<Int64> = []
                for _ in 0..<Int.random(in: 0...3, using: &random) {
                    let row = Int64.random(in: 0..<rowCount, using: &random)
                    rows.insert(row)
                    state[row] = Bool.random(using: &random) ? Int.random(in: 0...3, using: &random) : nil
                }
                commits.append(Commit(end: UInt64(index + 1) * 10, rows: rows, touchesJoinedTable: false))
                truth.append(state)
            }
            // The round reads the touched rows once, in the final state.
            let read = state
            let steps = CommitSteps.partition(commits, refetches: false)
            #expect(steps.first?.lowerBound == 0 && steps.last?.upperBound == commits.count)
            #expect(zip(steps, steps.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
            var applied = start
            for (step, rows) in zip(steps, CommitSteps.rows(of: steps, in: commits)) {
                for row in rows { applied[row] = read[row] }
                #expect(applied == truth[step.upperBound - 1], "seed \(seed): step \(step) of \(commits)")
            }
            // Maximal: every cut left out has a row touched on both sides of it.
            let cuts = Set(steps.map { $0.upperBound - 1 })
            for index in commits.indices.dropLast() where !cuts.contains(index) {
                let before = commits[...index].reduce(into: Set<Int64>()) { $0.formUnion($1.rows) }
                let after = commits[(index + 1)...].reduce(into: Set<Int64>()) { $0.formUnion($1.rows) }
                #expect(!before.isDisjoint(with: after), "seed \(seed): a cut after \(index) was possible in \(commits)")
            }
        }
    }
}
