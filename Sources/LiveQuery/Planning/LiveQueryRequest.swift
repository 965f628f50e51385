import GRDB
import LiveQueryCore

/// What a live query shows, as a value. Describe it once; ``LiveQuery`` runs it. Three forms:
///
/// - a GRDB request — a `QueryInterfaceRequest` with `filter`, `order` and to-one associations
///   (`joining`/`including(required:)`, `including(optional:)`), or an `SQLRequest`:
///   ``init(_:identity:as:section:version:)``;
/// - any SELECT as SQL with arguments: ``init(sql:arguments:identity:as:section:version:)``;
/// - a table, a filter, sort terms, an optional section column and an optional version column:
///   ``init(table:identity:as:filter:sort:section:version:)``.
///
/// ```swift
/// import GRDB
/// import LiveQuery
///
/// let inbox = LiveQueryRequest(
///     table: "conversation",
///     filter: .init("archived = 0 AND folder = ?", arguments: [3]),
///     sort: [SortTerm("day", .descending), SortTerm("last_activity", .descending)],
///     section: "day",
///     version: "version")
/// ```
///
/// The identity — the rowid or primary key of the table the rows come from, unless `identity`
/// names another column or expression unique in the result — breaks ties, so the order is total
/// and equals `ORDER BY <terms>, <identity>`. The section is the first sort term (sections appear
/// in sort order, like `sectionNameKeyPath`). ``LiveQuery/explain(_:in:)`` says, before anything
/// is observed, whether a request is maintained incrementally or refetched, and why.
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
    /// A SELECT given as SQL or as a GRDB request (then `table`, `filter` and `sort` are unused,
    /// and `identity`, `section` and `version` are expressions of the SELECT). A table request
    /// is lowered to one when planned (``lowered(_:)``), keeping its table, filter and sort for
    /// its description.
    var select: SelectSource?

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
        select = nil
    }

    /// Creates a request for the rows of any SELECT, identified by `identity`.
    ///
    /// - Parameters:
    ///   - sql: A SELECT. Joins that meet at most one row of each joined table (through an
    ///     equality on its primary key or a unique column) and ORDER BY terms that are columns
    ///     are maintained incrementally; anything else refetches and diffs (see
    ///     ``LiveQuery/explain(_:in:)``).
    ///   - arguments: The values of its placeholders.
    ///   - identity: An expression of the SELECT's tables unique in the result (`"message.uuid"`),
    ///     or the name of a result column; `nil` for the primary key or rowid of the first table
    ///     of the FROM clause.
    ///   - type: How identities are decoded.
    ///   - section: The expression that groups rows into sections: the first ORDER BY term.
    ///   - version: An expression that changes whenever a row's content does; without one a
    ///     digest of the result columns stands in for it.
    public init(sql: String, arguments: StatementArguments = StatementArguments(), identity: String? = nil, as type: ID.Type,
                section: String? = nil, version: String? = nil) {
        self.init(select: SelectSource(summary: sql) { _ in PreparedSelect(sql: sql, arguments: arguments, adapter: nil, prefetchesToMany: false) },
                  identity: identity, section: section, version: version)
    }

    /// Creates a request for the rows of a GRDB request — a `QueryInterfaceRequest` (with
    /// `filter`, `order`, `joining(required:)`, `including(required:)` and
    /// `including(optional:)` to-one associations) or an `SQLRequest` — identified by `identity`.
    ///
    /// ```swift
    /// import Foundation
    /// import GRDB
    /// import LiveQuery
    ///
    /// let conversationsByContact = LiveQueryRequest(
    ///     Conversation.including(required: Conversation.contact).order(sql: "contact.name, conversation.lastActivity"),
    ///     identity: "conversation.uuid", as: UUID.self)
    /// ```
    ///
    /// `including(all:)` (to-many prefetches) cannot be followed live: list the children in
    /// their own query.
    public init<Request: FetchRequest>(_ request: Request, identity: String? = nil, as type: ID.Type, section: String? = nil,
                                       version: String? = nil) {
        self.init(select: SelectSource(summary: "\(Request.self)") { db in
            let prepared = try request.makePreparedRequest(db, forSingleResult: false)
            return PreparedSelect(sql: prepared.statement.sql, arguments: prepared.statement.arguments, adapter: prepared.adapter,
                                   prefetchesToMany: PreparedSelect.hasSupplementaryFetch(prepared))
        }, identity: identity, section: section, version: version)
    }

    /// Creates a request for the rows of a GRDB request whose identity, section and version are
    /// GRDB expressions — columns of its aliased tables, for example:
    ///
    /// ```swift
    /// import Foundation
    /// import GRDB
    /// import LiveQuery
    ///
    /// struct Song: Codable, FetchableRecord, TableRecord, Sendable {
    ///     var uuid: UUID
    ///     var title: String
    /// }
    ///
    /// func songsByTitle() -> LiveQueryRequest<UUID> {
    ///     let songs = TableAlias(name: "song")
    ///     return LiveQueryRequest(Song.aliased(songs).order(songs[Column("title")]),
    ///                             identity: songs[Column("uuid")], as: UUID.self, section: songs[Column("title")])
    /// }
    /// ```
    ///
    /// Each expression is written as SQL the way GRDB writes it (a column of an alias is qualified
    /// with the alias's name), then planned as if given as text.
    public init<Request: FetchRequest>(_ request: Request, identity: some SQLSpecificExpressible & Sendable, as type: ID.Type,
                                       section: (any SQLSpecificExpressible & Sendable)? = nil,
                                       version: (any SQLSpecificExpressible & Sendable)? = nil) {
        self.init(request, identity: nil, as: type)
        let identity = SQL(identity)
        let section = section.map { SQL($0) }, version = version.map { SQL($0) }
        // Placeholders until planned: the SQL of an expression is only known on the database.
        self.section = section.map { _ in "<section expression>" }
        self.version = version.map { _ in "<version expression>" }
        self.identity = "<identity expression>"
        self.select?.expressions = { db in
            (try identity.build(db).sql, try section?.build(db).sql, try version?.build(db).sql)
        }
    }

    private init(select: SelectSource, identity: String?, section: String?, version: String?) {
        table = ""
        filter = nil
        sort = []
        self.identity = identity
        self.section = section
        self.version = version
        self.select = select
    }

    public var description: String {
        if let select, table.isEmpty {
            var parts = ["select: \(select.summary)"]
            if let identity { parts.append("identity: \(identity)") }
            if let section { parts.append("section: \(section)") }
            if let version { parts.append("version: \(version)") }
            return "LiveQueryRequest(" + parts.joined(separator: "; ") + ")"
        }
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

    /// Creates a request for the rows of a SELECT, identified by the rowid (or INTEGER PRIMARY
    /// KEY) of the first table of its FROM clause. To name another identity, give its type too:
    /// ``init(sql:arguments:identity:as:section:version:)``.
    public init(sql: String, arguments: StatementArguments = StatementArguments(), section: String? = nil, version: String? = nil) {
        self.init(sql: sql, arguments: arguments, identity: nil, as: Int64.self, section: section, version: version)
    }

    /// Creates a request for the rows of a GRDB request, identified by the rowid (or INTEGER
    /// PRIMARY KEY) of the table it fetches from. To name another identity, give its type too:
    /// ``init(_:identity:as:section:version:)``.
    public init<Request: FetchRequest>(_ request: Request, section: String? = nil, version: String? = nil) {
        self.init(request, identity: nil, as: Int64.self, section: section, version: version)
    }
}

/// A SELECT as a GRDB request or SQL: compiled on the database, with the adapter that decodes
/// its rows as records.
struct SelectSource: Sendable {
    let summary: String
    let prepare: @Sendable (Database) throws -> PreparedSelect
    /// The identity, section and version, when given as GRDB expressions: rendered as SQL on the
    /// database, as GRDB qualifies them.
    var expressions: (@Sendable (Database) throws -> (identity: String?, section: String?, version: String?))?
}

/// A SELECT ready to compile: its SQL, arguments and record adapter.
struct PreparedSelect {
    var sql: String
    var arguments: StatementArguments
    var adapter: (any RowAdapter)?
    /// Whether GRDB fetches more rows after this SELECT (`including(all:)`): those rows come from
    /// a second query, which a live query cannot follow.
    var prefetchesToMany: Bool

    /// Whether GRDB's prepared request runs a supplementary fetch after its statement. GRDB keeps
    /// that closure internal; its presence is read by reflection (`FirstHourTests.includingAllIsRefused` pins it, so
    /// a GRDB that renames it fails a test rather than letting `including(all:)` through).
    static func hasSupplementaryFetch(_ prepared: PreparedRequest) -> Bool {
        for child in Mirror(reflecting: prepared).children where child.label == "supplementaryFetch" {
            let value = Mirror(reflecting: child.value)
            return value.displayStyle == .optional && !value.children.isEmpty
        }
        return false
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
