/// A row of a list as a presenter sees it, whatever its source: its identity and a version of its
/// content. Two rows with the same identity and version show the same thing; a new version is a
/// reload. A live query's rows are `ListRow<ID>` (`LiveRow`), a server's list's
/// `ListRow<RemoteRowID>` (`RemoteRow`): one type, whose identity is the source's.
public struct ListRow<ID: Hashable & Sendable>: ListElement, Hashable, Sendable {
    /// The row's identity.
    public var id: ID
    /// A token of the row's content: equal tokens mean equal content.
    public var version: UInt64

    /// Creates a row.
    public init(id: ID, version: UInt64) {
        self.id = id
        self.version = version
    }
}

/// A section of a list, whatever its source: the key its rows share (the value of the section
/// column). A list without sections has one section, keyed by its source's NULL. A live query's
/// sections are `ListSection<SQLValue>` (`LiveSection`), a server's list's
/// `ListSection<WireValue>` (`RemoteSection`).
public struct ListSection<Key: Hashable & Sendable>: ListElement, Hashable, Sendable {
    /// The section's key.
    public var id: Key

    /// Creates a section.
    public init(id: Key) {
        self.id = id
    }
}
