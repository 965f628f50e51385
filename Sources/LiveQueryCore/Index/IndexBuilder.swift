/// Builds a result index from rows as they are read, already in order: full leaves are closed as
/// they fill, so the whole result never sits in one transient array (a million-row array would
/// double the memory a fresh index needs, and glibc keeps much of it after it is freed).
package struct IndexBuilder {
    let layout: ResultLayout
    let canonicalIdentity: IdentityCanonicalizer
    private(set) var leaves: [[IndexEntry]] = []
    private var current: [IndexEntry] = []
    private(set) var sections: [SectionEntry] = []
    private(set) var rowOfIdentity: [SQLValue: Int64] = [:]
    /// The rows left out: identities that do not decode, or repeat one before them.
    private(set) var leftOut = LeftOutSet()
    package private(set) var count = 0

    package init(layout: ResultLayout, canonicalIdentity: @escaping IdentityCanonicalizer) {
        self.layout = layout
        self.canonicalIdentity = canonicalIdentity
        current.reserveCapacity(CountedTree<IndexEntry>.leafCapacity)
    }

    /// Adds the next row in order. Rows whose identity does not decode, or repeats one before
    /// them, are left out and remembered.
    package mutating func append(_ entry: IndexEntry) {
        if !layout.identityIsRowid {
            let stored = layout.identity(of: entry)
            guard let identity = canonicalIdentity(stored) else {
                leftOut.insertInvalid(entry)
                return
            }
            guard rowOfIdentity[identity] == nil else {
                leftOut.insertDuplicate(entry, identity: identity)
                return
            }
            rowOfIdentity[identity] = entry.rowid
        }
        if layout.isSectioned {
            let key = layout.sectionKey(of: entry)
            if let last = sections.last, last.key == key { sections[sections.count - 1].count += 1 } else {
                sections.append(SectionEntry(key: key, count: 1))
            }
        }
        current.append(entry)
        count += 1
        if current.count == CountedTree<IndexEntry>.leafCapacity {
            leaves.append(current)
            current = []
            current.reserveCapacity(CountedTree<IndexEntry>.leafCapacity)
        }
    }

    /// Every row gathered so far, in order.
    var entries: FlattenSequence<[[IndexEntry]]> { (leaves + [current]).joined() }

    /// The leaves, the last one possibly partial (or empty when there is no row at all).
    mutating func finishLeaves() -> [[IndexEntry]] {
        if !current.isEmpty || leaves.isEmpty {
            // The last leaf at its exact size: no spare capacity kept for a million rows' index.
            leaves.append(Array(current))
            current = []
        }
        return leaves
    }
}
