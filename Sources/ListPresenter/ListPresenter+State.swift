import ListDiff

extension ListPresenter {
    /// What is in flight. Exactly one thing at a time: the work that arrives meanwhile waits in
    /// ``PendingWork``.
    ///
    /// What only means something while the work is in flight — the model a batch leads to, the
    /// selection it must not restore, the time-out that ends it — lives in the case, so it cannot
    /// outlive the work.
    enum State {
        /// Nothing in flight.
        case idle
        /// A batch is in flight.
        case applying(Batch)
        /// A programmatic scroll animation of the presenter's is in flight: its token, and the
        /// time-out that ends it if the view never reports its end.
        case scrolling(token: Int, timeout: Task<Void, Never>?)

        /// The time-out running for the work in flight, if any.
        var timeout: Task<Void, Never>? {
            switch self {
            case .idle: nil
            case let .applying(batch): batch.timeout
            case let .scrolling(_, timeout): timeout
            }
        }

        /// The model the batch in flight leads to, if it changes the model.
        var modelInFlight: Model? {
            guard case let .applying(batch) = self else { return nil }
            return batch.finalModel
        }
    }

    /// The stages of one change, applied one batch each.
    struct Batch {
        var stages: ArraySlice<PresentedStage>
        /// The model the stages lead to (`nil` for batches that only touch state rows or cells):
        /// the presenter's ``ListPresenter/model`` while the batch is in flight.
        var finalModel: Model?
        /// Names the stage in flight, so that a late completion is recognized.
        var token: Int
        /// The time-out of the stage in flight (`nil` without ``Configuration/completionTimeout``).
        /// Cancelled when the stage completes or times out, and when the presenter drops the
        /// batch for a new target: no sleeping task outlives its stage.
        var timeout: Task<Void, Never>?
        /// What the stage in flight must not lose.
        var context: StageContext
        /// The changes the stage in flight made to the view, and whether they were reconfigures:
        /// what its completion — or its time-out — restores the anchor and the selection through.
        var inFlight: (changes: ListChanges, reconfigures: Bool) = (ListChanges(), false)
    }

    /// One batch as the view receives it: changes in displayed indices and what the data source
    /// shows once they are applied.
    struct PresentedStage {
        var changes: ListChanges
        var displayed: Displayed
        /// Whether the changes are reloads to apply as reconfigures (cells and selection stay).
        var reconfigures: Bool
    }

    /// The visible and selected rows before a batch, by displayed path and identity.
    struct StageContext {
        var anchors: [(path: ItemPath, id: Row.ID, screenOffset: Double)] = []
        var selected: [(path: ItemPath, id: Item.ID)] = []
        /// Items deselected through the presenter while the stage is in flight: restoring the
        /// selection after it must not select them again. A deselection counts against the stage
        /// it happened during; the next stage starts from the selection as it is then.
        var deselected: Set<Item.ID> = []
    }
}

/// The work that waits while something is in flight.
@usableFromInline
struct PendingWork<SectionModel: ListElement, Item: ListElement> {
    typealias Model = AnySectionedList<SectionModel, Item>
    @usableFromInline typealias Differ = (ListSnapshot<SectionModel, Item>, ListSnapshot<SectionModel, Item>) -> Changeset<SectionModel, Item>

    /// A new model that does not come as a changeset from the current one.
    enum Target {
        /// Diff it against the model shown.
        case plain(Model, Differ)
        /// Show it with a reload.
        case replacement(Model)

        var model: Model {
            switch self {
            case let .plain(model, _), let .replacement(model): model
            }
        }
    }

    var target: Target?
    /// Changesets that chain from the target (or from the model in flight or shown), in order.
    var changesets: [Changeset<SectionModel, Item>] = []
    /// The load states changed, or the model did: state rows may have to follow.
    var blocksChanged = false
    /// Items whose visible cells must re-read their content.
    var reconfigures: Set<Item.ID> = []
    /// A scroll to an item, to run once everything else has landed.
    var scroll: (id: Item.ID, animated: Bool)?

    var hasModelWork: Bool { target != nil || !changesets.isEmpty }
}
