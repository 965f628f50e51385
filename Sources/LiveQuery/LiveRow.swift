import ListDiff

/// A row of a live query's result as a list sees it: its rowid and its content version (the
/// version column's value, or a local revision bumped on every update when there is none).
public struct LiveRow: ListElement, Hashable, Sendable {
    /// The rowid.
    public var id: Int64
    /// The version column's value, or a local revision.
    public var version: SQLValue

    /// Creates a row.
    public init(id: Int64, version: SQLValue) {
        self.id = id
        self.version = version
    }
}

/// A section of a live query's result: the value of the section column shared by its rows
/// (normalized under the sort term's collation). A query without sections has one section whose
/// key is `NULL`.
public struct LiveSection: ListElement, Hashable, Sendable {
    /// The section key.
    public var id: SQLValue

    /// Creates a section.
    public init(id: SQLValue) {
        self.id = id
    }
}

/// The changeset type live queries deliver.
public typealias LiveChangeset = Changeset<LiveSection, LiveRow>
/// The snapshot type of a live query's result.
public typealias LiveSnapshot = ListSnapshot<LiveSection, LiveRow>
