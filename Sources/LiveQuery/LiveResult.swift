import ListDiff

/// A live query's result at one commit: immutable, cheap to keep (it shares storage with the live
/// index), indexable by position without materializing the rows.
///
/// ```swift
/// let rows = result.rows(in: 0..<50)            // identities and versions of the first page
/// let path = result.itemPath(ofPosition: 120)   // section and item of the 121st row
/// ```
public struct LiveResult: Sendable {
    /// One section: its key and how many rows it holds.
    public struct Section: Hashable, Sendable {
        /// The section column's value shared by its rows (normalized under the collation).
        public var key: SQLValue
        /// How many rows the section holds.
        public var count: Int
    }

    let index: OrderIndex
    /// The sections in display order (one, keyed `NULL`, for a query without sections).
    public let sections: [Section]

    /// The number of rows.
    public var count: Int { index.count }

    /// The row at flat `position` (0 ..< count).
    public func row(at position: Int) -> LiveRow? {
        index.entry(at: position).map { LiveRow(id: $0.rowid, version: $0.version) }
    }

    /// The rows at the flat positions in `range`.
    public func rows(in range: Range<Int>) -> [LiveRow] {
        let clamped = range.clamped(to: 0..<count)
        return index.entries(in: clamped).map { LiveRow(id: $0.rowid, version: $0.version) }
    }

    /// The section and item of flat `position`.
    public func itemPath(ofPosition position: Int) -> ItemPath? {
        var start = 0
        for (section, info) in sections.enumerated() {
            if position < start + info.count { return ItemPath(section: section, item: position - start) }
            start += info.count
        }
        return nil
    }

    /// The flat position of `path`.
    public func position(of path: ItemPath) -> Int? {
        guard sections.indices.contains(path.section), (0..<sections[path.section].count).contains(path.item) else { return nil }
        return sections[0..<path.section].reduce(0) { $0 + $1.count } + path.item
    }

    /// The whole result as a snapshot (O(n)).
    public func snapshot() -> LiveSnapshot {
        var result: [SnapshotSection<LiveSection, LiveRow>] = []
        result.reserveCapacity(sections.count)
        var rows: [LiveRow] = []
        rows.reserveCapacity(index.count)
        index.forEach { rows.append(LiveRow(id: $0.rowid, version: $0.version)) }
        var start = 0
        for section in sections {
            result.append(SnapshotSection(LiveSection(id: section.key), items: Array(rows[start..<start + section.count])))
            start += section.count
        }
        return LiveSnapshot(sections: result)
    }
}
