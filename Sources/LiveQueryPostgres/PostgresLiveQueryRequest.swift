import LiveQuery
import PostgresNIO

/// What a PostgreSQL live query shows: the rows of one table that match a filter, in an order,
/// identified by the table's primary key, optionally grouped into sections by the first sort term.
///
/// ```swift
/// import LiveQuery
/// import LiveQueryPostgres
/// import PostgresNIO
///
/// func inbox(of owner: Int64) throws -> PostgresLiveQueryRequest<Int64> {
///     var arguments = PostgresBindings()
///     arguments.append(owner)
///     return PostgresLiveQueryRequest(
///         table: "message", identity: "id", as: Int64.self,
///         filter: "owner = $1 AND NOT archived", arguments: arguments,
///         sort: [SortTerm("received", .descending)], version: "revision")
/// }
/// ```
///
/// The filter is PostgreSQL's own SQL over the table's columns with `$n` arguments, so its
/// semantics are always the server's; rows are re-read through it. Sort terms name columns;
/// their collation is the column's. Which sorts are kept incrementally and which refetch:
/// ``PostgresLiveQuery/mode``.
public struct PostgresLiveQueryRequest<ID: LiveIdentity>: Sendable, CustomStringConvertible {
    /// The table, optionally schema-qualified (`public.message`), as PostgreSQL resolves it.
    public var table: String
    /// The identity column: the table's single-column primary key (the default when `nil`).
    public var identity: String?
    /// A boolean SQL expression over the table's columns, with `$1`, `$2`… from ``arguments``.
    public var filter: String?
    /// The filter's arguments.
    public var arguments: PostgresBindings
    /// The order; the identity breaks ties.
    public var sort: [SortTerm]
    /// Groups rows into sections by the first sort term's column when set (it must be that column).
    public var section: String?
    /// A column that changes whenever a row's content does; without it a row's whole content is
    /// compared to tell a reload.
    public var version: String?

    /// A request for `table`'s rows that match `filter`, in `sort` order, identified by the primary
    /// key (`identity`, when given, must name it) and held as `type`. Checked against the catalog
    /// when the query opens, not here.
    public init(table: String, identity: String? = nil, as type: ID.Type, filter: String? = nil,
                arguments: PostgresBindings = PostgresBindings(), sort: [SortTerm] = [], section: String? = nil,
                version: String? = nil) {
        self.table = table
        self.identity = identity
        self.filter = filter
        self.arguments = arguments
        self.sort = sort
        self.section = section
        self.version = version
    }

    /// The request as its parts, for logs and errors.
    public var description: String {
        var parts = ["table: \(table)"]
        if let identity { parts.append("identity: \(identity)") }
        if let filter { parts.append("filter: \(filter)") }
        if !sort.isEmpty { parts.append("sort: " + sort.map(\.description).joined(separator: ", ")) }
        if let section { parts.append("section: \(section)") }
        if let version { parts.append("version: \(version)") }
        return "PostgresLiveQueryRequest(" + parts.joined(separator: "; ") + ")"
    }
}
