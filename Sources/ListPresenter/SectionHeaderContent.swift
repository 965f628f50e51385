import ListDiff

/// What the header of a displayed section shows, as a ``ListCellSource`` answers it.
public enum SectionHeaderContent<SectionModel: ListElement> {
    /// The section on top that holds the list's own state row (shown while the list is loading,
    /// failed or empty); usually without a visible header.
    case listStatus(LoadState)
    /// A section of the model, with its load state (``ListPresenter/loadState(forSection:)``).
    case section(SectionModel, LoadState)

    /// The model section, unless this is the status section.
    public var section: SectionModel? {
        if case let .section(model, _) = self { return model }
        return nil
    }
}

extension SectionHeaderContent: Sendable where SectionModel: Sendable {}
