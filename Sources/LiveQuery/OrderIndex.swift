/// The order-statistic index of a live query's result: entries sorted by the comparator, with the
/// position of any entry in O(log n) and insertion or removal in O(log n + chunk).
///
/// Entries live in chunks of at most `maximumChunk` sorted entries; finding a chunk is a binary
/// search over the chunks' last entries, and an entry's position is the sum of the chunk sizes
/// before it plus its index in the chunk (a few thousand additions at a million rows, faster in
/// practice than a tree's pointer chasing). Chunks are shared between copies and copied only when
/// written, so publishing the index after every commit costs a copy of the chunk list, not of
/// the rows.
struct OrderIndex: Sendable {
    final class Chunk: @unchecked Sendable {
        // Mutated only through `OrderIndex`, which copies a shared chunk before writing it.
        var entries: [IndexEntry]
        init(_ entries: [IndexEntry]) { self.entries = entries }
    }

    static let maximumChunk = 1_024

    let comparator: SortKeyComparator
    private(set) var chunks: [Chunk] = []
    private(set) var count = 0

    init(comparator: SortKeyComparator) {
        self.comparator = comparator
    }

    /// Builds the index from entries already in comparator order (a fresh `ORDER BY` result).
    init(comparator: SortKeyComparator, sorted entries: [IndexEntry]) {
        self.comparator = comparator
        let size = Self.maximumChunk / 2
        var start = 0
        while start < entries.count {
            let end = min(start + size, entries.count)
            chunks.append(Chunk(Array(entries[start..<end])))
            start = end
        }
        count = entries.count
    }

    /// The chunk that holds `entry` or would hold it: the first whose last entry is not before it.
    private func chunkIndex(for entry: IndexEntry) -> Int {
        var low = 0, high = chunks.count - 1
        while low < high {
            let middle = (low + high) >> 1
            guard let last = chunks[middle].entries.last else { return middle }
            if comparator.compare(last, entry) < 0 { low = middle + 1 } else { high = middle }
        }
        return max(0, low)
    }

    /// The first index in `entries` whose entry is not before `entry`.
    private func lowerBound(of entry: IndexEntry, in entries: [IndexEntry]) -> Int {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) >> 1
            if comparator.compare(entries[middle], entry) < 0 { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private func offset(ofChunk index: Int) -> Int {
        var total = 0
        for chunk in chunks[0..<index] { total += chunk.entries.count }
        return total
    }

    /// Where `entry` (same rowid and key) sits: its chunk and its index in the chunk.
    private func locate(_ entry: IndexEntry) -> (chunk: Int, index: Int)? {
        guard !chunks.isEmpty else { return nil }
        let chunk = chunkIndex(for: entry)
        let index = lowerBound(of: entry, in: chunks[chunk].entries)
        guard index < chunks[chunk].entries.count, chunks[chunk].entries[index] == entry else { return nil }
        return (chunk, index)
    }

    /// The position of `entry`, or `nil` when it is not in the index.
    func position(of entry: IndexEntry) -> Int? {
        locate(entry).map { offset(ofChunk: $0.chunk) + $0.index }
    }

    /// The stored entry equal to `probe` (same rowid and key), with its version.
    func stored(matching probe: IndexEntry) -> IndexEntry? {
        locate(probe).map { chunks[$0.chunk].entries[$0.index] }
    }

    /// Inserts `entry` and returns its position.
    @discardableResult
    mutating func insert(_ entry: IndexEntry) -> Int {
        if chunks.isEmpty {
            chunks = [Chunk([entry])]
            count = 1
            return 0
        }
        let chunkIndex = chunkIndex(for: entry)
        makeUnique(chunkIndex)
        let index = lowerBound(of: entry, in: chunks[chunkIndex].entries)
        chunks[chunkIndex].entries.insert(entry, at: index)
        count += 1
        let position = offset(ofChunk: chunkIndex) + index
        if chunks[chunkIndex].entries.count > Self.maximumChunk {
            let half = chunks[chunkIndex].entries.count / 2
            let upper = Array(chunks[chunkIndex].entries[half...])
            chunks[chunkIndex].entries.removeSubrange(half...)
            chunks.insert(Chunk(upper), at: chunkIndex + 1)
        }
        return position
    }

    /// Removes `entry` and returns the position it had, or `nil` when it was not there.
    @discardableResult
    mutating func remove(_ entry: IndexEntry) -> Int? {
        guard let (chunkIndex, index) = locate(entry) else { return nil }
        let position = offset(ofChunk: chunkIndex) + index
        makeUnique(chunkIndex)
        chunks[chunkIndex].entries.remove(at: index)
        count -= 1
        if chunks[chunkIndex].entries.isEmpty { chunks.remove(at: chunkIndex) }
        return position
    }

    private mutating func makeUnique(_ index: Int) {
        if !isKnownUniquelyReferenced(&chunks[index]) {
            chunks[index] = Chunk(chunks[index].entries)
        }
    }

    /// Replaces `old` with `new`, which must sort at the same place (its key compares equal,
    /// though its values may differ: `'a'` and `'A'` under NOCASE); returns the position.
    @discardableResult
    mutating func replace(_ old: IndexEntry, with new: IndexEntry) -> Int? {
        guard let (chunkIndex, index) = locate(old) else { return nil }
        makeUnique(chunkIndex)
        chunks[chunkIndex].entries[index] = new
        return offset(ofChunk: chunkIndex) + index
    }

    /// The entry at `position`.
    func entry(at position: Int) -> IndexEntry? {
        guard position >= 0 else { return nil }
        var remaining = position
        for chunk in chunks {
            if remaining < chunk.entries.count { return chunk.entries[remaining] }
            remaining -= chunk.entries.count
        }
        return nil
    }

    /// The entries in `range` of positions, in order.
    func entries(in range: Range<Int>) -> [IndexEntry] {
        var result: [IndexEntry] = []
        result.reserveCapacity(range.count)
        var start = 0
        for chunk in chunks {
            let end = start + chunk.entries.count
            if end > range.lowerBound && start < range.upperBound {
                let from = max(range.lowerBound, start) - start
                let to = min(range.upperBound, end) - start
                result.append(contentsOf: chunk.entries[from..<to])
            }
            if end >= range.upperBound { break }
            start = end
        }
        return result
    }

    /// Every entry in order.
    func forEach(_ body: (IndexEntry) -> Void) {
        for chunk in chunks { for entry in chunk.entries { body(entry) } }
    }
}
