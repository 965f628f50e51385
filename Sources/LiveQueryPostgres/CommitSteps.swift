/// How the commits one round applies to a query are cut into steps, each ending in a result that
/// is the query's result after exactly the step's commits: a decision as a value, tested without
/// a database (`CommitStepsTests`).
///
/// A round reads the rows its commits touched once, in a snapshot that sees all of them. A row's
/// read is its state after the last commit that touched it, so the result after commit `j` is
/// known when no row touched up to `j` is touched again after it: then applying, in order, the
/// rows whose last touch is in each step gives each step's result. Every server over the database
/// then knows the result at the same positions, whatever commits its rounds happened to read
/// together — a client resumes on any of them.
///
/// A commit that touches a joined table reaches base rows through their link columns as they are
/// in the snapshot; a later commit of the round may have moved a row's link, so nothing after such
/// a commit is cut from it. A refetch (a truncation, a schema change, a shape followed by
/// refetching) makes the round one step.
enum CommitSteps {
    /// What one commit did to the query.
    struct Commit: Sendable, Equatable {
        /// The end of the commit.
        var end: UInt64
        /// The query's rows (row keys) it touched, directly or through joined rows.
        var rows: Set<Int64>
        /// Whether it touched a joined table.
        var touchesJoinedTable: Bool
    }

    /// The commits cut into steps: consecutive ranges of indices covering them all, in order.
    /// - Complexity: O(k + r) for k commits touching r rows in all.
    static func partition(_ commits: [Commit], refetches: Bool) -> [Range<Int>] {
        guard commits.count > 1, !refetches else { return commits.isEmpty ? [] : [0..<commits.count] }
        var first: [Int64: Int] = [:]
        var last: [Int64: Int] = [:]
        for (index, commit) in commits.enumerated() {
            for row in commit.rows {
                if first[row] == nil { first[row] = index }
                last[row] = index
            }
        }
        // A cut after commit j is blocked by each row touched at or before j and again after it.
        var blocked = [Int](repeating: 0, count: commits.count + 1)
        for (row, from) in first {
            guard let to = last[row], to > from else { continue }
            blocked[from] += 1
            blocked[to] -= 1
        }
        let joined = commits.firstIndex(where: \.touchesJoinedTable) ?? commits.count
        var steps: [Range<Int>] = []
        var start = 0
        var open = 0
        for index in commits.indices {
            open += blocked[index]
            let canCut = index == commits.count - 1 || (open == 0 && index < joined)
            if canCut {
                steps.append(start..<index + 1)
                start = index + 1
            }
        }
        return steps
    }

    /// Per step, the rows whose last touch is in it (what the step applies).
    static func rows(of steps: [Range<Int>], in commits: [Commit]) -> [Set<Int64>] {
        var stepOf: [Int] = []
        stepOf.reserveCapacity(commits.count)
        for (number, step) in steps.enumerated() { for _ in step { stepOf.append(number) } }
        var last: [Int64: Int] = [:]
        for (index, commit) in commits.enumerated() { for row in commit.rows { last[row] = index } }
        var rows = [Set<Int64>](repeating: [], count: steps.count)
        for (row, index) in last { rows[stepOf[index]].insert(row) }
        return rows
    }
}
