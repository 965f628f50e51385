import ListDiff

/// A live query's result at one commit: immutable, cheap to keep (it shares storage with the live
/// index and with every other result of the query), and readable by position without
/// materializing the rows. It is the ``SectionedList`` a list view's data source reads.
///
/// ```swift
/// import ListDiff
/// import LiveQuery
///
/// func firstPage(of result: LiveResult<Int64>) -> [Int64] {
///     result.rows(in: 0..<50).map(\.id)             // identities of the first page
/// }
/// ```
///
/// - Complexity: O(log n) for a row or a section by position, O(log n + k) for k rows in a
///   range; ``path(ofItem:)`` is O(log n) on the newest result of a query.
public struct LiveResult<ID: LiveIdentity>: SectionedList, Sendable {
    package let storage: PublishedResult

    package init(_ storage: PublishedResult) {
        self.storage = storage
    }

    /// One section: its key and how many rows it holds.
    public struct Section: Hashable, Sendable {
        /// The section column's value shared by its rows (normalized under the collation).
        public var key: SQLValue
        /// How many rows the section holds.
        public var count: Int
    }

    /// The number of rows.
    public var count: Int { storage.count }

    /// Whether the result holds every row. `false` for the first screen a query opens with while
    /// it indexes the rest (``LiveQueryOptions/firstScreenRows``): the rest comes as the next
    /// update, appended below.
    public var isComplete: Bool { storage.isComplete }

    public var sectionCount: Int { storage.sectionCount }

    public func itemCount(inSection section: Int) -> Int { storage.section(at: section).count }

    public var itemCount: Int { storage.count }

    public func section(at index: Int) -> LiveSection { LiveSection(id: storage.section(at: index).key) }

    public func item(at path: ItemPath) -> LiveRow<ID> {
        row(atValidPosition: storage.sectionStart(path.section) + path.item)
    }

    public var stateID: ListStateID? { storage.stateID }

    /// Where the row identified by `id` is: at a path, not in the result, or not known yet
    /// (the result is a first screen and the row may be below it).
    ///
    /// - Complexity: as ``path(ofItem:)``.
    public func location(of id: ID) -> RowLocation {
        if let path = path(ofItem: id) { return .at(path) }
        return isComplete ? .notInResult : .notYetKnown
    }

    /// The flat position of the row identified by `id`, or `nil` when it is not in this result.
    ///
    /// - Complexity: as ``path(ofItem:)``.
    public func position(of id: ID) -> Int? {
        path(ofItem: id).flatMap { position(of: $0) }
    }

    /// The rows of the SQL result this list leaves out, and why: their identity is not a valid
    /// `ID`, or another row of the result holds it. Empty in a healthy query; the list equals
    /// the SQL result minus exactly these rows.
    public var leftOut: LeftOutRows { storage.leftOut }

    /// The path of the row identified by `id`, or `nil` when it is not in this result.
    ///
    /// - Complexity: O(log n) when the row has not changed since this result (always, on the
    ///   newest one); O(n) otherwise.
    public func path(ofItem id: ID) -> ItemPath? {
        guard let index = storage.index, let position = index.position(ofIdentity: id.identityValue, in: storage) else { return nil }
        return storage.path(ofPosition: position)
    }

    public func index(ofSection id: SQLValue) -> Int? {
        let (index, found) = storage.sectionIndex(of: id)
        return found ? index : nil
    }

    /// The section at `index`, with its row count.
    public func sectionInfo(at index: Int) -> Section {
        let entry = storage.section(at: index)
        return Section(key: entry.key, count: entry.count)
    }

    /// The row at flat `position` (0 ..< count), or `nil` outside the result.
    public func row(at position: Int) -> LiveRow<ID>? {
        guard position >= 0, position < count else { return nil }
        return row(atValidPosition: position)
    }

    private func row(atValidPosition position: Int) -> LiveRow<ID> {
        row(of: storage.rows.element(at: position))
    }

    func row(of entry: IndexEntry) -> LiveRow<ID> {
        // Rows whose identity does not decode never enter the index (see `LiveIndex`).
        guard let id = ID(identityValue: storage.layout.identity(of: entry)) else {
            preconditionFailure("a row of a live result has an identity that is not a \(ID.self)")
        }
        return LiveRow(id: id, version: entry.token)
    }

    /// The rows at the flat positions in `range`.
    public func rows(in range: Range<Int>) -> [LiveRow<ID>] {
        let clamped = range.clamped(to: 0..<count)
        var result: [LiveRow<ID>] = []
        result.reserveCapacity(clamped.count)
        storage.rows.forEach(in: clamped) { entry in
            result.append(row(of: entry))
            return true
        }
        return result
    }

    /// The section and item of flat `position`.
    public func itemPath(ofPosition position: Int) -> ItemPath? {
        storage.path(ofPosition: position)
    }

    /// The flat position of `path`.
    public func position(of path: ItemPath) -> Int? {
        storage.position(of: path)
    }

    /// The whole result as a snapshot.
    ///
    /// - Complexity: O(n) — for tests, small lists and diffing; a data source reads the result
    ///   itself.
    public func snapshot() -> LiveSnapshot<ID> {
        var sections: [SnapshotSection<LiveSection, LiveRow<ID>>] = []
        sections.reserveCapacity(sectionCount)
        var start = 0
        for index in 0..<sectionCount {
            let info = storage.section(at: index)
            sections.append(SnapshotSection(LiveSection(id: info.key), items: rows(in: start..<start + info.count)))
            start += info.count
        }
        return LiveSnapshot(sections: sections)
    }
}
