/// Index-level changes between two states of a sectioned list, in UIKit's index conventions.
///
/// Deletes, reloads and the source of every move are indices of the state **before** the change;
/// inserts and the destination of every move are indices of the state **after** it.
///
/// Inside a ``ChangesetStage`` the changes form one batch that is safe to pass to a single
/// `performBatchUpdates`. In ``Changeset/changes`` they describe the whole transition (an item
/// can be both moved and reloaded there) and are meant for reading, not for one batch.
public struct ListChanges: Hashable, Sendable {
    /// Sections removed, as indices of the state before.
    public var sectionDeletes: [Int] = []
    /// Sections added, as indices of the state after.
    public var sectionInserts: [Int] = []
    /// Sections that moved, from an index before to an index after; they carry their items.
    public var sectionMoves: [Move<Int>] = []
    /// Sections whose own content changed, as indices of the state before.
    public var sectionReloads: [Int] = []
    /// Items removed, as paths of the state before.
    public var itemDeletes: [ItemPath] = []
    /// Items added, as paths of the state after.
    public var itemInserts: [ItemPath] = []
    /// Items that moved, from a path before to a path after (also across sections).
    public var itemMoves: [Move<ItemPath>] = []
    /// Items whose content changed, as paths of the state before.
    public var itemReloads: [ItemPath] = []

    /// Creates an empty set of changes.
    @inlinable
    public init() {}

    /// Whether there is no change at all.
    public var isEmpty: Bool {
        sectionDeletes.isEmpty && sectionInserts.isEmpty && sectionMoves.isEmpty && sectionReloads.isEmpty
            && itemDeletes.isEmpty && itemInserts.isEmpty && itemMoves.isEmpty && itemReloads.isEmpty
    }

    /// The number of operations of every kind together.
    public var count: Int {
        sectionDeletes.count + sectionInserts.count + sectionMoves.count + sectionReloads.count
            + itemDeletes.count + itemInserts.count + itemMoves.count + itemReloads.count
    }
}

/// A move from an index of the state before to an index of the state after.
public struct Move<Index: Hashable & Sendable>: Hashable, Sendable {
    /// Where the element was, in the state before.
    public var from: Index
    /// Where the element is, in the state after.
    public var to: Index

    /// Creates a move.
    @inlinable
    public init(from: Index, to: Index) {
        self.from = from
        self.to = to
    }
}
