import ListDiff

/// How a result's entries are laid out: the order, where the identity sits, whether the first
/// sort term groups rows into sections.
package struct ResultLayout: Sendable {
    /// The order of rows: the sort terms, then the identity when it is not the rowid, then the
    /// rowid (for a refetched result: no rule at all, the rowid being the fetch ordinal).
    let ordering: any RowOrdering
    /// Whether the identity is the rowid (else it is the last value of the key).
    let identityIsRowid: Bool
    /// How the first key value groups rows into sections (its collation normalizes the key);
    /// `nil` without sections.
    let sections: (any SectionOrdering)?
    /// Whether sections are in fetch order rather than ordered by `sections` (a refetched
    /// result whose order LiveList cannot reproduce): lookups by section key then scan.
    let sectionsArePositional: Bool
    /// How the engine loads the content of this layout's rows as records (SQLite's is a
    /// `QueryPlan.RecordQuery`); the core only carries it along with the layout.
    package var records: (any Sendable)?
    /// The order as the query's columns state it, when they can (``ResultOrder``).
    package var resultOrder: ResultOrder?
    /// The rows' table, identity and filter, when the engine states them exactly (``ResultSource``).
    package var resultSource: ResultSource?

    var isSectioned: Bool { sections != nil }

    package init(ordering: any RowOrdering, identityIsRowid: Bool, sections: (any SectionOrdering)?, sectionsArePositional: Bool) {
        self.ordering = ordering
        self.identityIsRowid = identityIsRowid
        self.sections = sections
        self.sectionsArePositional = sectionsArePositional
        records = nil
    }

    func sectionKey(of entry: IndexEntry) -> SQLValue {
        guard let sections else { return .null }
        return sections.sectionKey(of: entry.key.first)
    }

    package func identity(of entry: IndexEntry) -> SQLValue {
        identityIsRowid ? .integer(entry.rowid) : entry.key.last
    }
}

struct RowOrder: TreeOrder {
    let ordering: any RowOrdering
    @inline(__always) func compare(_ lhs: IndexEntry, _ rhs: IndexEntry) -> Int { ordering.compare(lhs, rhs) }
}

struct SectionOrder: TreeOrder {
    let ordering: any SectionOrdering
    @inline(__always) func compare(_ lhs: SectionEntry, _ rhs: SectionEntry) -> Int { ordering.compare(lhs.key, rhs.key) }
}

/// The sections of a published result: one implicit section, or a counted tree of sections.
enum PublishedSections: Sendable {
    case flat(count: Int)
    case tree(FrozenTree<SectionEntry>)

    var count: Int {
        switch self {
        case .flat: 1
        case let .tree(tree): tree.count
        }
    }

    func section(at index: Int) -> SectionEntry {
        switch self {
        case let .flat(count): SectionEntry(key: .null, count: count)
        case let .tree(tree): tree.element(at: index)
        }
    }

    /// The position of the first row of section `index`.
    func start(of index: Int) -> Int {
        switch self {
        case .flat: 0
        case let .tree(tree): tree.weight(before: index)
        }
    }

    /// The flat position of `path`, or `nil` when it is outside these sections.
    ///
    /// - Complexity: O(log s) for s sections.
    func position(of path: ItemPath) -> Int? {
        guard path.section >= 0, path.section < count, path.item >= 0, path.item < section(at: path.section).count else { return nil }
        return start(of: path.section) + path.item
    }

    /// The bytes of these sections that `newer` does not share (see
    /// ``FrozenTree/bytesNotShared(with:)``); nothing for one implicit section.
    func bytesNotShared(with newer: PublishedSections) -> Int {
        guard case let .tree(old) = self else { return 0 }
        if case let .tree(new) = newer { return old.bytesNotShared(with: new) }
        return old.bytes
    }
}

/// One published state of a live query's result: immutable, shares every node with the states
/// before and after it, and answers positional questions in O(log n).
package struct PublishedResult: Sendable {
    let rows: FrozenTree<IndexEntry>
    let sections: PublishedSections
    package let stateID: ListStateID
    package let layout: ResultLayout
    /// The index that published it, for identity lookups (exact on the newest state).
    let index: LiveIndex?
    /// Whether it holds every row (not only the first screen of a query still being indexed).
    let isComplete: Bool
    /// The rows of the SQL result this state leaves out (their identity is invalid or taken).
    package let leftOut: LeftOutRows

    package var count: Int { rows.count }

    var sectionCount: Int { sections.count }

    func section(at index: Int) -> SectionEntry { sections.section(at: index) }

    /// The position of the first row of section `index`.
    func sectionStart(_ index: Int) -> Int { sections.start(of: index) }

    /// The index of the section keyed `key`, and whether it exists (else where it would go).
    func sectionIndex(of key: SQLValue) -> (index: Int, found: Bool) {
        switch sections {
        case .flat: return (0, true)
        case let .tree(tree):
            guard let ordering = layout.sections else { return (0, tree.count > 0) }
            guard !layout.sectionsArePositional else {
                var index = 0, found: Int?
                tree.forEach(in: 0..<tree.count) { section in
                    if section.key == key { found = index }
                    index += 1
                    return found == nil
                }
                return (found ?? tree.count, found != nil)
            }
            let (position, found) = tree.lowerBound(of: SectionEntry(key: key, count: 0), order: SectionOrder(ordering: ordering))
            return (position, found)
        }
    }

    /// The section and item of the row at flat `position`.
    func path(ofPosition position: Int) -> ItemPath? {
        guard position >= 0, position < count else { return nil }
        switch sections {
        case .flat: return ItemPath(section: 0, item: position)
        case let .tree(tree):
            let (_, index, before) = tree.element(holdingWeight: position)
            return ItemPath(section: index, item: position - before)
        }
    }

    /// The path of `entry`, which sits at `position`: found through its section key, O(log n).
    func path(of entry: IndexEntry, at position: Int) -> ItemPath {
        let section = sectionIndex(of: layout.sectionKey(of: entry)).index
        return ItemPath(section: section, item: position - sectionStart(section))
    }

    /// The flat position of `path`, or `nil` when it is outside the result.
    func position(of path: ItemPath) -> Int? { sections.position(of: path) }

    /// The position of `entry` (same key and rowid), or `nil`.
    func position(of entry: IndexEntry) -> Int? {
        let (position, found) = rows.lowerBound(of: entry, order: RowOrder(ordering: layout.ordering))
        return found ? position : nil
    }
}
