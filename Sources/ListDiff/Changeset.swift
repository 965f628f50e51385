/// Everything that changed between two states of a sectioned list, and how to apply it safely.
///
/// Create one with ``init(from:to:)`` (the diff), receive one from a live query, or make one from
/// your own logical changes with ``init(changes:from:to:duplicates:)``. Read ``changes`` to know
/// what happened (which rows left, entered, moved or changed); apply ``stages`` to a
/// `UICollectionView`/`UITableView`, one `performBatchUpdates` per stage, to get there without an
/// inconsistency exception. The stages are made the first time they are read, once for the
/// changeset and all its copies, so a changeset whose consumer only reads ``changes`` costs no
/// staging.
///
/// ```swift
/// import ListDiff
/// import ListTesting
///
/// @MainActor
/// func show(_ latest: ListSnapshot<Day, Row>, after displayed: ListSnapshot<Day, Row>,
///           in view: HeadlessListView<Row, Day>, dataSource: SnapshotDataSource<Day, Row>) throws {
///     let changeset = Changeset(from: displayed, to: latest)
///     for stage in changeset.stages {
///         try view.performBatchUpdates {
///             dataSource.snapshot = stage.snapshot
///             try view.apply(stage.changes)
///         }
///     }
/// }
/// ```
///
/// Index conventions (UIKit's and Realm's): deletes, reloads and move sources are indices of the
/// old state; inserts and move destinations are indices of the new state.
public struct Changeset<SectionModel: ListElement, Item: ListElement> {
    /// What every copy shares: the transition, and its stages once they are read.
    let storage: Storage

    /// The whole transition in one place, for reading: every row that left (also the rows of
    /// deleted sections), entered (also the rows of inserted sections), moved between or within
    /// surviving sections, or changed content. An item can be both moved and reloaded here.
    ///
    /// A row whose old or new section is deleted or inserted is reported as deleted and inserted,
    /// not moved, because UIKit cannot move items out of a deleted or into an inserted section.
    public var changes: ListChanges { storage.changes }
    /// The transition split into batches that each obey every UIKit batch rule, in order. Empty
    /// when nothing changed.
    ///
    /// The stages are made when first read, by any copy of the changeset, and kept: a consumer
    /// that only reads ``changes`` (a model, a diff's caller) never pays for them.
    ///
    /// - Complexity: O(c log c) for c changes the first time, on the reading thread; O(1) after.
    public var stages: [ChangesetStage<SectionModel, Item>] { storage.stages }
    /// Identifiers that were not unique in the old or new snapshot.
    public var duplicates: DuplicateReport<SectionModel.ID, Item.ID> { storage.duplicates }
    /// The state the changeset starts from. Every changeset has one; the type stays optional for
    /// the callers written when hand-made changesets had none.
    public var before: AnySectionedList<SectionModel, Item>? { storage.before }
    /// The state the changeset leads to. Every changeset has one (see ``before``).
    public var after: AnySectionedList<SectionModel, Item>? { storage.after }

    /// Whether nothing changed (then ``stages`` is empty too), answered without staging.
    public var isEmpty: Bool { changes.isEmpty }
}

extension Changeset: Sendable where SectionModel: Sendable, Item: Sendable, SectionModel.ID: Sendable, Item.ID: Sendable {}
