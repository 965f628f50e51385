import ListDiff

/// The shape of a ``LiveResult``: its sections and their counts, without its rows — what maps
/// paths of that result to positions once the result itself is gone. A server keeps one per
/// changeset it keeps for resuming clients: it shares every section node a commit did not touch
/// with the shapes after it, so it costs O(change), and nothing of the rows.
package struct LiveResultShape: Sendable {
    let sections: _SectionsSnapshot
    /// The number of rows.
    package let count: Int

    /// The number of sections.
    package var sectionCount: Int {
        switch sections {
        case .flat: 1
        case let .tree(tree): tree.count
        }
    }

    /// The flat position of `path`, or `nil` outside the result.
    ///
    /// - Complexity: O(log s) for s sections.
    package func position(of path: ItemPath) -> Int? {
        guard path.section >= 0, path.section < sectionCount, path.item >= 0 else { return nil }
        switch sections {
        case let .flat(count):
            return path.item < count ? path.item : nil
        case let .tree(tree):
            guard path.item < tree.element(at: path.section).count else { return nil }
            return tree.weight(before: path.section) + path.item
        }
    }

    /// The bytes of this shape that `newer` (a later shape of the same query) does not share.
    package func bytesNotShared(with newer: LiveResultShape) -> Int {
        guard case let .tree(old) = sections else { return 0 }
        if case let .tree(new) = newer.sections { return old.bytesNotShared(with: new) }
        return old.bytes
    }
}

extension LiveResult {
    /// Its sections and counts, without its rows.
    package var shape: LiveResultShape { LiveResultShape(sections: storage.sections, count: storage.count) }
}
