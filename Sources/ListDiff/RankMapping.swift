/// Where the untouched elements of one sequence go in a batch update, by UIKit's rule
/// (docs/UIKIT-BATCH-RULES.md §1.4): the slots named by inserts and move destinations are filled
/// first, and the untouched elements fill the remaining slots in their old relative order.
///
/// Built from the removed old indices (deletes and move sources) and the occupied new indices
/// (inserts and move destinations), each sorted; answers in O(log c) for c changes.
struct RankMapping: Sendable {
    /// Old indices that do not survive in place: deleted or moved away, sorted.
    let removed: [Int]
    /// New indices filled by inserts or move destinations, sorted.
    let occupied: [Int]
    let movedTo: [Int: Int]
    let movedFrom: [Int: Int]

    init(removed: [Int], occupied: [Int], moves: [Move<Int>]) {
        self.removed = removed.sorted()
        self.occupied = occupied.sorted()
        var to: [Int: Int] = [:], from: [Int: Int] = [:]
        for move in moves {
            to[move.from] = move.to
            from[move.to] = move.from
        }
        movedTo = to
        movedFrom = from
    }

    /// The new index of old index `old`, or `nil` when it is deleted.
    func newIndex(ofOld old: Int) -> Int? {
        if let destination = movedTo[old] { return destination }
        if Self.contains(removed, old) { return nil }
        let rank = old - Self.countLess(than: old, in: removed)
        return Self.select(rank, notIn: occupied)
    }

    /// The old index of new index `new`, or `nil` when it is inserted.
    func oldIndex(ofNew new: Int) -> Int? {
        if let source = movedFrom[new] { return source }
        if Self.contains(occupied, new) { return nil }
        let rank = new - Self.countLess(than: new, in: occupied)
        return Self.select(rank, notIn: removed)
    }

    /// The number of elements of `sorted` below `value`.
    static func countLess(than value: Int, in sorted: [Int]) -> Int {
        var low = 0, high = sorted.count
        while low < high {
            let middle = (low + high) >> 1
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }

    static func contains(_ sorted: [Int], _ value: Int) -> Bool {
        let index = countLess(than: value, in: sorted)
        return index < sorted.count && sorted[index] == value
    }

    /// The `rank`-th non-negative integer (from 0) that is not in `sorted` (strictly increasing).
    ///
    /// `sorted[j] - j` never decreases, so the number of excluded values below the answer is the
    /// first `j` where `sorted[j] - j > rank`.
    static func select(_ rank: Int, notIn sorted: [Int]) -> Int {
        var low = 0, high = sorted.count
        while low < high {
            let middle = (low + high) >> 1
            if sorted[middle] - middle > rank { high = middle } else { low = middle + 1 }
        }
        return rank + low
    }
}
