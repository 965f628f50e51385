/// A read-only sectioned list as a list view's data source reads it: how many sections, how many
/// items in each, the section and the item at a place.
///
/// ``ListSnapshot`` is one (arrays, O(1) access). A live query's result is another: it shares
/// storage with the query's index and answers in O(log n) without copying the rows. The staged
/// intermediate states of a ``Changeset`` are views over the states before and after it, so a
/// one-row change never materializes a million-row array.
///
/// ```swift
/// import ListDiff
///
/// func render(_ list: some SectionedList<VersionedItem<String, Int>, VersionedItem<Int64, Int>>) {
///     for section in 0..<list.sectionCount {
///         print(list.section(at: section).id, list.itemCount(inSection: section))
///     }
/// }
/// ```
///
/// Conformers must be immutable values: a list is read from whichever thread holds it, and
/// ``AnySectionedList`` is `Sendable` on that promise.
public protocol SectionedList<SectionModel, Item> {
    /// The section type.
    associatedtype SectionModel: ListElement
    /// The item type.
    associatedtype Item: ListElement

    /// The number of sections.
    var sectionCount: Int { get }
    /// The number of items in section `section`.
    func itemCount(inSection section: Int) -> Int
    /// The section at `index`.
    func section(at index: Int) -> SectionModel
    /// The item at `path`.
    func item(at path: ItemPath) -> Item
    /// The number of items in all sections.
    var itemCount: Int { get }
    /// Which state of which source this is, when the source can say (a live query's commit);
    /// `nil` otherwise. Two lists with the same non-`nil` identity hold the same items.
    var stateID: ListStateID? { get }
    /// The path of the first item whose identity is `id`, or `nil`.
    ///
    /// - Complexity: O(n) by default; sources with an identity index answer faster (a live
    ///   query's result in O(log n)).
    func path(ofItem id: Item.ID) -> ItemPath?
    /// The index of the first section whose identity is `id`, or `nil`.
    ///
    /// - Complexity: O(sections) by default.
    func index(ofSection id: SectionModel.ID) -> Int?
}

extension SectionedList {
    public var itemCount: Int {
        var total = 0
        for section in 0..<sectionCount { total += itemCount(inSection: section) }
        return total
    }

    public var stateID: ListStateID? { nil }

    public func path(ofItem id: Item.ID) -> ItemPath? {
        for section in 0..<sectionCount {
            for item in 0..<itemCount(inSection: section) where self.item(at: ItemPath(section: section, item: item)).id == id {
                return ItemPath(section: section, item: item)
            }
        }
        return nil
    }

    public func index(ofSection id: SectionModel.ID) -> Int? {
        for section in 0..<sectionCount where self.section(at: section).id == id { return section }
        return nil
    }

    /// The item at `path`, or `nil` when the path is outside the list.
    public func itemIfPresent(at path: ItemPath) -> Item? {
        guard path.section >= 0, path.section < sectionCount, path.item >= 0, path.item < itemCount(inSection: path.section) else {
            return nil
        }
        return item(at: path)
    }

    /// Every item, materialized as a snapshot.
    ///
    /// - Complexity: O(n) — for small lists, tests and the diff, not for a live list's hot path.
    public func materialized() -> ListSnapshot<SectionModel, Item> {
        var sections: [SnapshotSection<SectionModel, Item>] = []
        sections.reserveCapacity(sectionCount)
        for section in 0..<sectionCount {
            let count = itemCount(inSection: section)
            var items: [Item] = []
            items.reserveCapacity(count)
            for item in 0..<count { items.append(self.item(at: ItemPath(section: section, item: item))) }
            sections.append(SnapshotSection(self.section(at: section), items: items))
        }
        return ListSnapshot(sections: sections)
    }
}

/// Names one state of one source of lists, so that a consumer can tell whether a changeset
/// starts from the state it shows: a live query gives each commit's result a new `generation`.
public struct ListStateID: Hashable, Sendable, CustomStringConvertible {
    /// The source (one live query, for example), unique in the process.
    public var source: UInt64
    /// The state's number within its source.
    public var generation: UInt64

    /// Creates an identity.
    public init(source: UInt64, generation: UInt64) {
        self.source = source
        self.generation = generation
    }

    public var description: String { "\(source)#\(generation)" }
}

extension ListSnapshot: SectionedList {
    @inlinable public var sectionCount: Int { sections.count }
    @inlinable public func itemCount(inSection section: Int) -> Int { sections[section].items.count }
    @inlinable public func section(at index: Int) -> SectionModel { sections[index].model }
    @inlinable public func item(at path: ItemPath) -> Item { sections[path.section].items[path.item] }
}

/// Any ``SectionedList``, type-erased: what a ``ChangesetStage`` and a presenter hold.
public struct AnySectionedList<SectionModel: ListElement, Item: ListElement>: SectionedList {
    @usableFromInline let base: any SectionedList<SectionModel, Item>

    /// Wraps `list`.
    @inlinable
    public init(_ list: some SectionedList<SectionModel, Item>) {
        if let erased = list as? AnySectionedList { base = erased.base } else { base = list }
    }

    @inlinable public var sectionCount: Int { base.sectionCount }
    @inlinable public func itemCount(inSection section: Int) -> Int { base.itemCount(inSection: section) }
    @inlinable public func section(at index: Int) -> SectionModel { base.section(at: index) }
    @inlinable public func item(at path: ItemPath) -> Item { base.item(at: path) }
    @inlinable public var itemCount: Int { base.itemCount }
    @inlinable public var stateID: ListStateID? { base.stateID }
    @inlinable public func path(ofItem id: Item.ID) -> ItemPath? { base.path(ofItem: id) }
    @inlinable public func index(ofSection id: SectionModel.ID) -> Int? { base.index(ofSection: id) }

    /// The wrapped list as a snapshot: free when it is one, O(n) otherwise.
    @inlinable
    public var snapshot: ListSnapshot<SectionModel, Item> {
        if let snapshot = base as? ListSnapshot<SectionModel, Item> { return snapshot }
        return base.materialized()
    }
}

// Sound because conformers of `SectionedList` are immutable values (the protocol's contract) and
// the elements they hand out are `Sendable` here.
extension AnySectionedList: @unchecked Sendable where SectionModel: Sendable, Item: Sendable {}
