import ListDiff

/// Counts the reads made through ``CountingList``s, for tests that a cost does not grow with the
/// list: "a one-row change reads a bounded number of rows, whatever the list's size".
///
public final class ReadCounter: Sendable {
    private let count = Locked(0)

    /// Creates a counter at zero.
    public init() {}

    /// The reads so far; set it to 0 before the work to measure.
    public var reads: Int {
        get { count.withLock { $0 } }
        set { count.withLock { $0 = newValue } }
    }

    func increment() { count.withLock { $0 += 1 } }
}

/// A list that forwards to `base` and counts every read of a count, a section, an item or a
/// lookup in `counter`.
public struct CountingList<Base: SectionedList>: SectionedList {
    /// The list read.
    public let base: Base
    /// Where reads are counted.
    public let counter: ReadCounter

    /// Wraps `base`, counting in `counter`.
    public init(base: Base, counter: ReadCounter) {
        self.base = base
        self.counter = counter
    }

    public var sectionCount: Int { counter.increment(); return base.sectionCount }
    public func itemCount(inSection section: Int) -> Int { counter.increment(); return base.itemCount(inSection: section) }
    public func section(at index: Int) -> Base.SectionModel { counter.increment(); return base.section(at: index) }
    public func item(at path: ItemPath) -> Base.Item { counter.increment(); return base.item(at: path) }
    public var itemCount: Int { counter.increment(); return base.itemCount }
    public var stateID: ListStateID? { base.stateID }
    public func path(ofItem id: Base.Item.ID) -> ItemPath? { counter.increment(); return base.path(ofItem: id) }
    public func index(ofSection id: Base.SectionModel.ID) -> Int? { counter.increment(); return base.index(ofSection: id) }
}

extension CountingList: Sendable where Base: Sendable {}
