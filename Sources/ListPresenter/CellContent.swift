import ListDiff

/// What the cell at a displayed path shows, as a ``ListCellSource`` answers it: a row with its
/// record, a row whose record is still loading (or failed), or one of the presenter's state rows.
/// Exhaustive: a cell provider switches over it without `default:`.
public enum CellContent<SectionModel: ListElement, Item: ListElement, Record> {
    /// A row of the model with its record.
    case record(Item, Record)
    /// A row of the model whose record is not held yet: its identity is known, its record is
    /// loading or its load failed (with a retry).
    case placeholder(Item, PlaceholderState)
    /// A state row of the presenter — loading, failed with a retry, or empty — for the whole
    /// list (``StateBlock/Scope/list``) or for a section.
    case state(StateBlock<SectionModel.ID>)

    /// The model row, unless this is a state row.
    public var item: Item? {
        switch self {
        case let .record(item, _), let .placeholder(item, _): item
        case .state: nil
        }
    }

    /// The record, when it is loaded.
    public var record: Record? {
        if case let .record(_, record) = self { return record }
        return nil
    }
}

extension CellContent: Sendable where Item: Sendable, Record: Sendable, SectionModel.ID: Sendable {}
