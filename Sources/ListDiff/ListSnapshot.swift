/// The state of a sectioned list at one moment: its sections in order, each with its items in order.
///
/// A snapshot is a value; the diff compares two of them. A flat list is a snapshot with one section.
/// Identifiers should be unique (items across the whole snapshot, sections among sections), but
/// duplicates are tolerated: the diff pairs them up as distinct occurrences in order and reports
/// them in ``Changeset/duplicates``.
///
/// ```swift
/// import ListDiff
///
/// typealias Note = VersionedItem<Int64, Int>
/// let today = ListSnapshot<VersionedItem<String, Int>, Note>(sections: [
///     SnapshotSection(VersionedItem(id: "Today"), items: [Note(id: 1, version: 3), Note(id: 2, version: 1)]),
/// ])
/// ```
public struct ListSnapshot<SectionModel: ListElement, Item: ListElement> {
    /// The sections in display order.
    public var sections: [SnapshotSection<SectionModel, Item>]

    /// Creates a snapshot from its sections.
    @inlinable
    public init(sections: [SnapshotSection<SectionModel, Item>] = []) {
        self.sections = sections
    }

    /// The number of items in all sections.
    @inlinable
    public var itemCount: Int {
        var count = 0
        for section in sections { count += section.items.count }
        return count
    }

    /// The item at `path`.
    @inlinable
    public subscript(path: ItemPath) -> Item {
        sections[path.section].items[path.item]
    }

    /// Whether both snapshots hold the same identities in the same places with equal content.
    public func isContentEqual(to other: ListSnapshot) -> Bool {
        guard sections.count == other.sections.count else { return false }
        for (lhs, rhs) in zip(sections, other.sections) {
            guard lhs.model.id == rhs.model.id, lhs.model.isContentEqual(to: rhs.model),
                  lhs.items.count == rhs.items.count else { return false }
            for (a, b) in zip(lhs.items, rhs.items) where a.id != b.id || !a.isContentEqual(to: b) {
                return false
            }
        }
        return true
    }
}

extension ListSnapshot where SectionModel == SingleSection {
    /// Creates a snapshot of a flat list: one section holding `items`.
    @inlinable
    public init(items: [Item]) {
        self.init(sections: [SnapshotSection(SingleSection(), items: items)])
    }
}

extension ListSnapshot: Sendable where SectionModel: Sendable, Item: Sendable {}
extension ListSnapshot: Equatable where SectionModel: Equatable, Item: Equatable {}

/// One section of a ``ListSnapshot``: the section's own model and its items.
public struct SnapshotSection<SectionModel: ListElement, Item: ListElement> {
    /// The section's identity and content (for example its header).
    public var model: SectionModel
    /// The items of the section in display order.
    public var items: [Item]

    /// Creates a section.
    @inlinable
    public init(_ model: SectionModel, items: [Item]) {
        self.model = model
        self.items = items
    }
}

extension SnapshotSection: Sendable where SectionModel: Sendable, Item: Sendable {}
extension SnapshotSection: Equatable where SectionModel: Equatable, Item: Equatable {}

/// The section model of a flat list: one section whose identity and content never change.
public struct SingleSection: ListElement, Hashable, Sendable {
    /// Always the same identity, so the one section is never inserted, deleted or moved.
    public var id: Int { 0 }
    /// Creates the section.
    @inlinable
    public init() {}
}
