extension RefetchReason {
    /// Why another connection's commit could not be read row by row from the change log
    /// (``ChangeTracking``).
    public enum ExternalCommit: Sendable, Hashable {
        /// The database has no change log (or ``LiveQueryOptions/followsChangeLog`` is off).
        case noChangeLog
        /// The change log does not track these tables the query reads.
        case untrackedTables([String])
        /// The change log could not be read (dropped or altered by hand); the failure was
        /// delivered as ``LiveQueryError/changeLogUnavailable(_:)``.
        case changeLogUnavailable
        /// The change log was dropped and created again.
        case changeLogRecreated
        /// The change log was pruned past this query's position (the position expired).
        case changeLogPruned
        /// A row of this table changed that the change log cannot name.
        case unnamedRows(table: String)
        /// A row of this joined table changed whose key cannot be bound as an argument.
        case unboundKey(table: String)
        /// This table, which the query reads but not row by row, changed.
        case tableChanged(String)
        /// The request is always refetched.
        case request([Shape])
        /// More rows changed than ``LiveQueryOptions/refetchThreshold``.
        case tooManyRowsChanged(threshold: Int)

        /// The clause that follows "another connection committed".
        var clause: String {
            switch self {
            case .noChangeLog: ""
            case let .untrackedTables(tables): "; \(tables.joined(separator: ", ")) not tracked by the change log"
            case .changeLogUnavailable: "; the change log cannot be read"
            case .changeLogRecreated: "; the change log was recreated"
            case .changeLogPruned: "; the change log was pruned past this query's position (it expired)"
            case let .unnamedRows(table): " a change to \(table), whose rows the change log cannot name"
            case let .unboundKey(table): " a change to a row of \(table) whose key cannot be bound"
            case let .tableChanged(table): " a change to \(table), which the query reads"
            case let .request(shapes): "; " + RefetchReason.request(shapes).description
            case let .tooManyRowsChanged(threshold): " changes to more than \(threshold) rows"
            }
        }
    }
}
