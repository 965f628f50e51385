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
    /// What the data source shows once this batch is applied.
    public var snapshot: ListSnapshot<SectionModel, Item>

    /// Creates a stage.
    @inlinable
    public init(changes: ListChanges, snapshot: ListSnapshot<SectionModel, Item>) {
        self.changes = changes
        self.snapshot = snapshot
    }
}

extension ChangesetStage: Sendable where SectionModel: Sendable, Item: Sendable {}
