/// Which rows of a window a client lacks after a transition: the rows it must be sent so that it
/// holds every row of its window with its content at the new version.
///
/// A client holds the rows at positions `held` of the state before (with their content). After
/// the transition, a position of `window` needs its row sent when the row is new to it: inserted,
/// moved, reloaded (`changed`), or a row that stayed but was outside `held`. Rows that stay keep
/// their relative order (moves are explicit), so the stayers from outside `held` sit at the
/// window's two ends: two scans from the ends find them, and the middle is never read.
struct WindowRows {
    /// Positions, after the transition, of inserted, moved and reloaded rows, sorted.
    var changed: [Int]
    /// Whether rows moved with whole sections (their order is then not kept): every position is
    /// looked at.
    var sectionsMoved: Bool
    /// The position before the transition of the stayer at a position after it (`nil` for a row
    /// that is new).
    var oldPosition: (Int) -> Int?

    /// The positions of `window` (after the transition) whose rows a client holding `held`
    /// (before it) lacks, in order.
    ///
    /// - Complexity: O(k log c + e) for k changed rows in the window and e rows that slid in at
    ///   its ends, plus `oldPosition` calls for those e rows; O(w) when sections moved.
    func missing(window: Range<Int>, held: Range<Int>) -> [Int] {
        guard !window.isEmpty else { return [] }
        let lower = changed.partitionPoint { $0 < window.lowerBound }
        let upper = changed.partitionPoint { $0 < window.upperBound }
        let changedInWindow = changed[lower..<upper]
        var missing = Set(changedInWindow)
        let isChanged = { (position: Int) -> Bool in
            let index = changedInWindow.partitionPoint { $0 < position }
            return index < changedInWindow.endIndex && changedInWindow[index] == position
        }
        if sectionsMoved || held.isEmpty {
            for position in window where !isChanged(position) {
                guard let old = oldPosition(position), held.contains(old) else {
                    missing.insert(position)
                    continue
                }
            }
            return missing.sorted()
        }
        var top = window.lowerBound
        while top < window.upperBound {
            if isChanged(top) {
                top += 1
                continue
            }
            guard let old = oldPosition(top), old >= held.lowerBound else {
                missing.insert(top)
                top += 1
                continue
            }
            if old >= held.upperBound {
                // Every later stayer came from below `held` too.
                for position in top..<window.upperBound where !isChanged(position) { missing.insert(position) }
                return missing.sorted()
            }
            break
        }
        var bottom = window.upperBound - 1
        while bottom > top {
            if isChanged(bottom) {
                bottom -= 1
                continue
            }
            guard let old = oldPosition(bottom), old < held.upperBound else {
                missing.insert(bottom)
                bottom -= 1
                continue
            }
            break
        }
        return missing.sorted()
    }
}

extension Collection {
    /// The first index whose element does not satisfy `belongsBefore` (which must hold for a
    /// prefix only).
    func partitionPoint(_ belongsBefore: (Element) -> Bool) -> Index {
        var low = startIndex
        var count = self.count
        while count > 0 {
            let half = count / 2
            let middle = index(low, offsetBy: half)
            if belongsBefore(self[middle]) {
                low = index(after: middle)
                count -= half + 1
            } else {
                count = half
            }
        }
        return low
    }
}
