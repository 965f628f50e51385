/// Identifiers that occurred more than once in a snapshot handed to the diff.
///
/// Duplicates are bad input that real data sources do send (a join that fans out, a sync that
/// delivers a row twice). The diff never fails on them: the n-th occurrence of an identifier in the
/// old snapshot is paired with its n-th occurrence in the new one, in order, and the pairs are
/// treated as distinct rows. This report says that it happened, so an app can log it.
public struct DuplicateReport<SectionID: Hashable, ItemID: Hashable> {
    /// Section identifiers that occurred more than once in the old or the new snapshot.
    public var sectionIDs: Set<SectionID> = []
    /// Item identifiers that occurred more than once in the old or the new snapshot.
    public var itemIDs: Set<ItemID> = []

    /// Creates an empty report.
    @inlinable
    public init() {}

    /// Whether no duplicate was seen.
    public var isEmpty: Bool { sectionIDs.isEmpty && itemIDs.isEmpty }
}

extension DuplicateReport: Sendable where SectionID: Sendable, ItemID: Sendable {}
extension DuplicateReport: Equatable {}
