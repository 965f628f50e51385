import ListDiff

/// One step of a changing source, as ``ListCellSource/receive(_:)`` takes it — the shape of a
/// live query's events without naming a database: a first state, a change from the state before,
/// a failure, or a recovery from one.
public enum ListSourceEvent<SectionModel: ListElement, Item: ListElement> {
    /// A first state (or a jump): shown with one reload. `isComplete` is `false` for a first
    /// screen whose rest is still coming: an empty one then shows a loading row.
    case initial(AnySectionedList<SectionModel, Item>, isComplete: Bool = true)
    /// A change from the state before, applied as it is (composed while a batch animates).
    case changes(Changeset<SectionModel, Item>, isComplete: Bool = true)
    /// The source failed; the rows it delivered before stay, under an error row with `retry`.
    case failure(LoadFailure)
    /// The source works again without a change to deliver (a retry found nothing new): the
    /// error row goes.
    case recovered(isComplete: Bool = true)
}
