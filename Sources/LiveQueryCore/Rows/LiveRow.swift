import ListDiff

/// A row of a live query's result as a list sees it: its identity — the rowid, or the request's
/// identity column, as `ID` — and a content token, which changes whenever the version column (or,
/// without one, any column of the row) or a sort value changes. Equal tokens mean equal content.
public typealias LiveRow<ID: LiveIdentity> = ListRow<ID>

/// A section of a live query's result: the value of the section column shared by its rows
/// (normalized under the sort term's collation: NOCASE folds ASCII letters, RTRIM drops trailing
/// spaces, a REAL equal to an integer becomes that INTEGER). A query without sections has one
/// section whose key is `NULL`.
public typealias LiveSection = ListSection<SQLValue>

public typealias LiveChangeset<ID: LiveIdentity> = Changeset<LiveSection, LiveRow<ID>>
/// The snapshot type of a live query's result.
public typealias LiveSnapshot<ID: LiveIdentity> = ListSnapshot<LiveSection, LiveRow<ID>>
