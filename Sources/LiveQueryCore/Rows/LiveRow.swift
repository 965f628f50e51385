import ListDiff

/// A row of a live query's result as a list sees it: its identity and a content token.
public struct LiveRow<ID: LiveIdentity>: ListElement, Hashable, Sendable {
    /// The row's identity: the rowid, or the request's identity column, as `ID`.
    public var id: ID
    /// A 64-bit token of the row's content: it changes whenever the version column (or, without
    /// one, any column of the row) or a sort value changes. Equal tokens mean equal content.
    public var version: UInt64

    /// Creates a row.
    public init(id: ID, version: UInt64) {
        self.id = id
        self.version = version
    }
}

/// A section of a live query's result: the value of the section column shared by its rows
/// (normalized under the sort term's collation: NOCASE folds ASCII letters, RTRIM drops trailing
/// spaces, a REAL equal to an integer becomes that INTEGER). A query without sections has one
/// section whose key is `NULL`.
public struct LiveSection: ListElement, Hashable, Sendable {
    /// The section key.
    public var id: SQLValue

    /// Creates a section.
    public init(id: SQLValue) {
        self.id = id
    }
}

/// The changeset type live queries deliver.
public typealias LiveChangeset<ID: LiveIdentity> = Changeset<LiveSection, LiveRow<ID>>
/// The snapshot type of a live query's result.
public typealias LiveSnapshot<ID: LiveIdentity> = ListSnapshot<LiveSection, LiveRow<ID>>
