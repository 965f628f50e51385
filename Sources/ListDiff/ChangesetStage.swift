/// One batch of a staged changeset: changes that are safe to apply in a single
/// `performBatchUpdates`, and the snapshot the data source must show once they are applied.
///
/// ```swift
/// for stage in changeset.stages {
///     collectionView.performBatchUpdates {
///         dataSource.snapshot = stage.snapshot   // the data source moves first…
///         collectionView.apply(stage.changes)    // …then the view is told, inside the same batch
///     }
/// }
/// ```
public struct ChangesetStage<SectionModel: ListElement, Item: ListElement> {
    /// What this batch changes, in the indices of the state before and after this batch.
    public var changes: ListChanges

    /// Either the snapshot itself or how to build it: a live query answers a one-row write in
    /// microseconds and must not copy a million rows unless someone reads them.
    @usableFromInline
    enum _Storage {
        case value(ListSnapshot<SectionModel, Item>)
        case deferred(@Sendable () -> ListSnapshot<SectionModel, Item>)
    }

    @usableFromInline var _storage: _Storage

    /// What the data source shows once this batch is applied. For a stage built with
    /// ``init(changes:deferredSnapshot:)`` it is built on each access (O(n)): read it once.
    @inlinable
    public var snapshot: ListSnapshot<SectionModel, Item> {
        switch _storage {
        case let .value(snapshot): snapshot
        case let .deferred(build): build()
        }
    }

    /// Creates a stage.
    @inlinable
    public init(changes: ListChanges, snapshot: ListSnapshot<SectionModel, Item>) {
        self.changes = changes
        _storage = .value(snapshot)
    }

    /// Creates a stage whose snapshot is built only when read.
    @inlinable
    public init(changes: ListChanges, deferredSnapshot: @escaping @Sendable () -> ListSnapshot<SectionModel, Item>) {
        self.changes = changes
        _storage = .deferred(deferredSnapshot)
    }
}

extension ChangesetStage: Sendable where SectionModel: Sendable, Item: Sendable {}

extension ChangesetStage._Storage: Sendable where SectionModel: Sendable, Item: Sendable {}
