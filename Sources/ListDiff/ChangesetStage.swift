/// One batch of a staged changeset: changes that are safe to apply in a single
/// `performBatchUpdates`, and the state the data source must show once they are applied.
///
/// ```swift
/// import ListDiff
/// import ListTesting
///
/// @MainActor
/// func apply(_ changeset: Changeset<Day, Row>, to view: HeadlessListView<Row, Day>,
///            dataSource: SnapshotDataSource<Day, Row>) throws {
///     for stage in changeset.stages {
///         try view.performBatchUpdates {
///             dataSource.snapshot = stage.snapshot   // the data source moves first…
///             try view.apply(stage.changes)          // …then the view is told, inside the same batch
///         }
///     }
/// }
/// ```
public struct ChangesetStage<SectionModel: ListElement, Item: ListElement> {
    /// What this batch changes, in the indices of the state before and after this batch.
    public var changes: ListChanges
    /// What the data source shows once this batch is applied. In a changeset's ``Changeset/stages``
    /// the intermediate states are views over the states before and after the whole changeset
    /// (O(log c) per read for c changes), and the last stage's state is the state after it.
    public var state: AnySectionedList<SectionModel, Item>

    /// The state as an array-backed snapshot: free when the stage was built from one, O(n)
    /// otherwise — data sources of large lists read ``state`` instead.
    public var snapshot: ListSnapshot<SectionModel, Item> { state.snapshot }

    /// Creates a stage that shows `snapshot`.
    @inlinable
    public init(changes: ListChanges, snapshot: ListSnapshot<SectionModel, Item>) {
        self.changes = changes
        state = AnySectionedList(snapshot)
    }

    /// Creates a stage that shows `state`.
    @inlinable
    public init(changes: ListChanges, state: some SectionedList<SectionModel, Item>) {
        self.changes = changes
        self.state = AnySectionedList(state)
    }
}

extension ChangesetStage: Sendable where SectionModel: Sendable, Item: Sendable {}
