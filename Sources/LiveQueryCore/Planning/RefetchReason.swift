/// Why a live query fetched its whole result again instead of re-reading the rows a commit
/// touched: the reason a ``LiveUpdatePath/refetch(reason:)`` update carries, and that
/// ``LiveQueryExplanation`` gives for a request that is always refetched.
///
/// Match on it to react to a kind of refetch; its `description` is the sentence the demo, the
/// logs and ``LiveQueryExplanation`` print.
///
/// ```swift
/// import LiveQuery
///
/// func isExpected(_ update: LiveQueryUpdate<Int64>) -> Bool {
///     switch update.path {
///     case .refetch(reason: .criteriaChanged), .refetch(reason: .request): true
///     case .refetch: false   // worth a look: a bulk write, another process without a change log…
///     case .incremental, .firstFetchCompleted: true
///     }
/// }
/// ```
public enum RefetchReason: Sendable, Hashable, CustomStringConvertible {
    /// The request has shapes LiveList does not maintain incrementally (all of them, in the
    /// order they were found): every commit to a table it reads refetches.
    case request([Shape])
    /// ``LiveQuery/setRequest(_:)`` changed the filter, the sort or the sections.
    case criteriaChanged
    /// More rows changed in one transaction than ``LiveQueryOptions/refetchThreshold``: one
    /// ordered read is cheaper than re-reading each row.
    case tooManyRowsChanged(threshold: Int)
    /// GRDB reported changes it could not describe row by row (`Database.notifyChanges(in:)`).
    case undescribedChanges
    /// A table the query reads, but not row by row, changed.
    case tableChanged(String)
    /// A WITHOUT ROWID table the query reads changed: its changes name no row.
    case tableWithoutRowidChanged
    /// The schema changed (a migration, or a VACUUM that renumbers rowids).
    case schemaChanged
    /// Another connection or process committed, and its changes cannot be read row by row.
    case anotherConnection(ExternalCommit)
    /// An earlier failure (delivered as a ``LiveQueryEvent/failure(_:)``) left the result behind
    /// the database: this refetch catches up.
    case recovering

    public var description: String {
        switch self {
        case let .request(shapes): shapes.map(\.description).joined(separator: "; ")
        case .criteriaChanged: "criteria changed"
        case let .tooManyRowsChanged(threshold): "more than \(threshold) rows changed in one transaction"
        case .undescribedChanges: "the database reported changes it could not describe"
        case let .tableChanged(table): "the query reads \(table), which changed"
        case .tableWithoutRowidChanged: "a WITHOUT ROWID table the query reads changed"
        case .schemaChanged: "the schema changed (a migration or VACUUM)"
        case let .anotherConnection(commit): "another connection committed" + commit.clause
        case .recovering: "recovering from a failure"
        }
    }
}
