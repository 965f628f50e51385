import ListDiff

/// The shape of a ``LiveResult``: its sections and their counts, without its rows — what maps
/// paths of that result to positions once the result itself is gone. A server keeps one per
/// changeset it keeps for resuming clients: it shares every section node a commit did not touch
/// with the shapes after it, so it costs O(change), and nothing of the rows.
package struct LiveResultShape: Sendable {
    let sections: PublishedSections
    /// The number of rows.
    package let count: Int

    /// The flat position of `path`, or `nil` outside the result.
    ///
    /// - Complexity: O(log s) for s sections.
    package func position(of path: ItemPath) -> Int? { sections.position(of: path) }

    /// The bytes of this shape that `newer` (a later shape of the same query) does not share.
    package func bytesNotShared(with newer: LiveResultShape) -> Int { sections.bytesNotShared(with: newer.sections) }
}

extension LiveResult {
    /// Its sections and counts, without its rows.
    package var shape: LiveResultShape { LiveResultShape(sections: storage.sections, count: storage.count) }
}
