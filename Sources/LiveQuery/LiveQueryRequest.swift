import GRDB

/// What a live query shows, as a value: a table, a filter, an order, optional sections, an
/// optional version column and the identity of rows. Describe it once; ``LiveQuery`` runs it.
///
/// ```swift
/// let inbox = LiveQueryRequest(
///     table: "conversation",
///     filter: .init("archived = 0 AND folder = ?", arguments: [3]),
///     sort: [SortTerm("day", .descending), SortTerm("last_activity", .descending)],
///     section: "day",
///     version: "version")
/// ```
///
/// Rules: every column must exist; the section column must be the first sort term (sections
/// appear in sort order, like `sectionNameKeyPath`); the identity — the rowid unless
/// `identity` names a column with a UNIQUE constraint — breaks ties, so the order is total and
/// equals `ORDER BY <terms>, <identity>`.
public struct LiveQueryRequest<ID: LiveIdentity>: Sendable, CustomStringConvertible {
    /// A WHERE clause and its arguments (``LiveQueryFilter``).
    public typealias Filter = LiveQueryFilter

    /// The table the rows come from.
    public var table: String
    /// Which rows are in the result; `nil` for all.
    public var filter: Filter?
    /// The order, first term first; the identity breaks ties.
    public var sort: [SortTerm]
    /// The column whose value groups rows into sections; must be the first sort term's column.
    public var section: String?
    /// A column whose change means the row's content changed (a counter, a timestamp, a digest).
    /// Without one, a digest of every column of the row stands in for it.
    public var version: String?
    /// The column that identifies rows, unique in the table; `nil` for the rowid (or, for a
    /// WITHOUT ROWID table, its single-column primary key).
    public var identity: String?

    /// Creates a request for rows identified by `identity` (a column with a UNIQUE constraint or
    /// the primary key), decoded as `type`.
    public init(
        table: String, identity: String?, as type: ID.Type, filter: Filter? = nil, sort: [SortTerm] = [],
        section: String? = nil, version: String? = nil
    ) {
        self.table = table
        self.identity = identity
        self.filter = filter
        self.sort = sort
        self.section = section
        self.version = version
    }

    public var description: String {
        var parts = ["table: \(table)"]
        if let identity { parts.append("identity: \(identity)") }
        if let filter { parts.append("filter: \(filter.sql)") }
        if !sort.isEmpty { parts.append("sort: " + sort.map(\.description).joined(separator: ", ")) }
        if let section { parts.append("section: \(section)") }
        if let version { parts.append("version: \(version)") }
        return "LiveQueryRequest(" + parts.joined(separator: "; ") + ")"
    }
}

extension LiveQueryRequest where ID == Int64 {
    /// Creates a request for rows identified by their rowid.
    public init(table: String, filter: Filter? = nil, sort: [SortTerm] = [], section: String? = nil, version: String? = nil) {
        self.init(table: table, identity: nil, as: Int64.self, filter: filter, sort: sort, section: section, version: version)
    }
}

/// A WHERE clause and its arguments, evaluated by SQLite itself.
public struct LiveQueryFilter: Sendable {
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
