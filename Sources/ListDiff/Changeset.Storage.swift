extension Changeset {
    /// What every copy of a changeset shares: the transition as it was made, and its stages once
    /// someone reads them. Staging runs at most once per changeset, on the first reader's thread;
    /// readers that come meanwhile wait for it and get the same stages.
    final class Storage {
        let changes: ListChanges
        let before: AnySectionedList<SectionModel, Item>
        let after: AnySectionedList<SectionModel, Item>
        let duplicates: DuplicateReport<SectionModel.ID, Item.ID>
        private let lock = PthreadLock()
        /// `nil` until ``stages`` is first read; read and written under `lock` only.
        private var stagedOnce: [ChangesetStage<SectionModel, Item>]?

        init(changes: ListChanges, before: AnySectionedList<SectionModel, Item>, after: AnySectionedList<SectionModel, Item>,
             duplicates: DuplicateReport<SectionModel.ID, Item.ID>) {
            self.changes = changes
            self.before = before
            self.after = after
            self.duplicates = duplicates
        }

        /// The stages, made on the first read (O(c log c) for c changes) and kept.
        var stages: [ChangesetStage<SectionModel, Item>] {
            lock.withLock {
                if let stagedOnce { return stagedOnce }
                let stages = Changeset.stage(changes, from: before, to: after)
                stagedOnce = stages
                return stages
            }
        }

        /// Whether the stages have been made (for tests: reading the rest must not make them).
        var isStaged: Bool { lock.withLock { stagedOnce != nil } }
    }
}

// `@unchecked Sendable`: every stored property is immutable except `stagedOnce`, which is read and
// written only while `lock` is held; the lists, changes and identifiers it holds are `Sendable`
// under these conditions (``AnySectionedList`` is, for `Sendable` elements).
extension Changeset.Storage: @unchecked Sendable
    where SectionModel: Sendable, Item: Sendable, SectionModel.ID: Sendable, Item.ID: Sendable {}
