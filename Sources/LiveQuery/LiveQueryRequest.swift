import GRDB

/// What a live query shows, as a value: a table, a filter, an order, optional sections and an
/// optional version column. Describe it once; ``LiveQuery`` runs it.
///
/// ```swift
/// let inbox = LiveQueryRequest(
///     table: "conversation",
///     filter: LiveQueryRequest.Filter("archived = 0 AND folder = ?", arguments: [folderID]),
///     sort: [SortTerm("day", .descending), SortTerm("lastActivity", .descending)],
///     section: "day",
///     version: "version"
/// )
/// ```
///
/// Rules: every column must exist; the section column must be the first sort term (sections
/// appear in sort order, like `sectionNameKeyPath`); the rowid (or the INTEGER PRIMARY KEY
/// aliasing it) identifies rows and breaks ties, so the order is total.
public struct LiveQueryRequest: Sendable {
    /// A WHERE clause and its arguments, evaluated by SQLite itself.
    public struct Filter: Sendable {
        /// The WHERE expression, without `WHERE`.
        public var sql: String
        /// The values of the expression's `?` placeholders.
        public var arguments: StatementArguments

        /// Creates a filter.
        public init(_ sql: String, arguments: StatementArguments = StatementArguments()) {
            self.sql = sql
            self.arguments = arguments
        }
    }

    /// The table the rows come from.
    public var table: String
    /// Which rows are in the result; `nil` for all.
    public var filter: Filter?
    /// The order, first term first; the rowid breaks ties.
    public var sort: [SortTerm]
    /// The column whose value groups rows into sections; must be the first sort term's column.
    public var section: String?
    /// A column whose change means the row's content changed (a counter, a timestamp, a digest).
    /// Without one, any update of a row that stays in place reloads it.
    public var version: String?

    /// Creates a request.
    public init(table: String, filter: Filter? = nil, sort: [SortTerm] = [], section: String? = nil, version: String? = nil) {
        self.table = table
        self.filter = filter
        self.sort = sort
        self.section = section
        self.version = version
    }
}
