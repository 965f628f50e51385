import ListDiff
import LiveListWire

/// One state of a remote list: every section with its count, and the rows the client knows —
/// those of its window. Rows outside it read as ``RemoteRowID/unloaded(position:)``. A value:
/// the presenter holds the states it animates between.
public struct RemoteListState: SectionedList, Sendable {
    /// The sections' keys, in order.
    public let keys: [WireValue]
    /// The sections' row counts.
    public let counts: [Int]
    /// The flat position of each section's first row (and the total at the end).
    let starts: [Int]
    /// The rows the client knows, by flat position.
    let known: [Int: RemoteRow]
    /// Names this state: a presenter applies a changeset only to the state it starts from.
    public let stateID: ListStateID?

    init(keys: [WireValue], counts: [Int], known: [Int: RemoteRow], stateID: ListStateID) {
        self.keys = keys
        self.counts = counts
        var starts = [0]
        starts.reserveCapacity(counts.count + 1)
        for count in counts { starts.append((starts.last ?? 0) + count) }
        self.starts = starts
        self.known = known
        self.stateID = stateID
    }

    /// The number of rows.
    public var count: Int { starts.last ?? 0 }
    public var sectionCount: Int { keys.count }
    public func itemCount(inSection section: Int) -> Int { counts[section] }
    public func section(at index: Int) -> RemoteSection { RemoteSection(id: keys[index]) }
    public func item(at path: ItemPath) -> RemoteRow { row(at: starts[path.section] + path.item) }
    public var itemCount: Int { count }

    /// The row at flat `position`.
    public func row(at position: Int) -> RemoteRow {
        known[position] ?? RemoteRow(id: .unloaded(position: position), version: 0)
    }

    /// The flat position of `path`.
    ///
    /// - Complexity: O(1).
    public func position(of path: ItemPath) -> Int? {
        guard path.section >= 0, path.section < counts.count, path.item >= 0, path.item < counts[path.section] else { return nil }
        return starts[path.section] + path.item
    }

    /// The path of flat `position`.
    ///
    /// - Complexity: O(log s) for s sections.
    public func path(ofPosition position: Int) -> ItemPath? {
        guard position >= 0, position < count else { return nil }
        var low = 0
        var high = counts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if starts[middle] <= position { low = middle } else { high = middle - 1 }
        }
        // Empty sections share their start with the next one: take the last section starting here.
        return ItemPath(section: low, item: position - starts[low])
    }

    public func path(ofItem id: RemoteRow.ID) -> ItemPath? {
        switch id {
        case let .unloaded(position): return known[position] == nil ? path(ofPosition: position) : nil
        case .row: return known.first { $0.value.id == id }.flatMap { path(ofPosition: $0.key) }
        }
    }
}
