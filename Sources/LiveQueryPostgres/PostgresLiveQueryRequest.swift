import LiveQueryCore
import PostgresNIO

/// What a PostgreSQL live query shows, as a value: any SELECT with `$n` arguments, or a table, a
/// filter and sort terms. Describe it once; ``PostgresLiveQuery`` runs it.
///
/// ```swift
/// import LiveQuery
/// import LiveQueryPostgres
/// import PostgresNIO
///
/// func inbox(of owner: Int64) -> PostgresLiveQueryRequest<Int64> {
///     var arguments = PostgresBindings()
///     arguments.append(owner)
///     return PostgresLiveQueryRequest(
///         sql: """
///             SELECT m.id, m.subject, m.received, c.name AS sender
///             FROM message m JOIN contact c ON c.id = m.sender_id
///             WHERE m.owner = $1 AND NOT m.archived
///             ORDER BY c.name, m.received DESC
///             """,
///         arguments: arguments, as: Int64.self, section: "c.name", version: "m.revision")
/// }
/// ```
///
/// The SELECT is PostgreSQL's own SQL, so its semantics are always the server's: rows are re-read
/// through it. It is followed row by row when it reads one base table (the first of its FROM
/// clause, with a single-column primary key; its rows identified by that key, or by any NOT NULL
/// column of it with a unique index on it alone) with INNER or LEFT joins that each meet at
/// most one row — an ON equality between the joined table's primary key and a column of an earlier
/// table — any WHERE, and ORDER BY terms that are columns of any of its tables. Anything else
/// (GROUP BY, DISTINCT, aggregates, window functions, LIMIT, subqueries in FROM, joins that meet
/// several rows, ORDER BY expressions, collations PostgreSQL does not compare by bytes) is
/// refetched on every commit to a table it reads, with the reason in ``PostgresLiveQuery/mode``;
/// ``PostgresLiveQuery/explain(_:in:)`` says which, before anything is followed.
public struct PostgresLiveQueryRequest<ID: LiveIdentity>: Sendable, CustomStringConvertible {
    /// The SELECT (`nil` for a table request, whose ``table``, ``filter`` and ``sort`` make it).
    public var sql: String?
    /// The table of a table request, optionally schema-qualified (`public.message`), as
    /// PostgreSQL resolves it.
    public var table: String
    /// The identity: the base table's single-column primary key, which it defaults to, or any NOT
    /// NULL column of the base table with a unique index on it alone — a `uuid`, say (a column
    /// name, `alias.column`; for a refetched SELECT, the name of a result column).
    public var identity: String?
    /// A table request's boolean SQL expression over the table's columns.
    public var filter: String?
    /// The values of `$1`, `$2`… in the SELECT or the filter.
    public var arguments: PostgresBindings {
        // Bindings set by hand are no longer the values they were made from.
        didSet { argumentValues = nil }
    }
    /// The arguments as values, when the request was made from them
    /// (``init(sql:values:identity:as:section:version:)``): queries that differ only in their
    /// arguments then re-read a round's rows in one statement.
    package private(set) var argumentValues: [SQLValue]?
    /// A table request's order; the identity breaks ties.
    public var sort: [SortTerm]
    /// Groups rows into sections by the first sort term: that term (as written in the ORDER BY,
    /// or its column's name).
    public var section: String?
    /// An expression that changes whenever a row's content does (a column of the SELECT's
    /// tables); without one a row's whole content is compared to tell a reload.
    public var version: String?

    /// A request for `table`'s rows that match `filter`, in `sort` order, identified by the primary
    /// key or by `identity` (a NOT NULL column with a unique index on it alone) and held as `type`.
    /// Checked against the catalog when the query opens, not here.
    public init(table: String, identity: String? = nil, as type: ID.Type, filter: String? = nil,
                arguments: PostgresBindings = PostgresBindings(), sort: [SortTerm] = [], section: String? = nil,
                version: String? = nil) {
        sql = nil
        self.table = table
        self.identity = identity
        self.filter = filter
        self.arguments = arguments
        self.sort = sort
        self.section = section
        self.version = version
    }

    /// A request for the rows of a SELECT, identified by `identity` (the base table's primary key
    /// by default, or a NOT NULL column of it with a unique index on it alone) and held as `type`.
    /// - Parameters:
    ///   - sql: A SELECT, with `$1`, `$2`… for `arguments`.
    ///   - section: The first ORDER BY term, as written, when rows are grouped into sections.
    ///   - version: An expression that changes whenever a row's content does (`m.revision`).
    public init(sql: String, arguments: PostgresBindings = PostgresBindings(), identity: String? = nil, as type: ID.Type,
                section: String? = nil, version: String? = nil) {
        self.sql = sql
        table = ""
        self.identity = identity
        filter = nil
        self.arguments = arguments
        sort = []
        self.section = section
        self.version = version
    }

    /// A request for the rows of a SELECT whose arguments are `values`: integers bound as `int8`,
    /// reals as `float8`, text as `text`, blobs as `bytea`, NULL untyped (PostgreSQL infers its
    /// type where it is used). Queries made so that differ only in their values re-read the rows a
    /// commit touched in one statement (docs/POSTGRESQL.md), which bindings made by hand cannot.
    /// - Parameters:
    ///   - sql: A SELECT, with `$1`, `$2`… for `values`.
    ///   - section: The first ORDER BY term, as written, when rows are grouped into sections.
    ///   - version: An expression that changes whenever a row's content does (`m.revision`).
    public init(sql: String, values: [SQLValue], identity: String? = nil, as type: ID.Type, section: String? = nil, version: String? = nil) {
        var binds = PostgresBindings()
        for value in values { Self.bind(value, into: &binds) }
        self.init(sql: sql, arguments: binds, identity: identity, as: type, section: section, version: version)
        argumentValues = values
    }

    /// Binds `value` as ``init(sql:values:identity:as:section:version:)`` does.
    package static func bind(_ value: SQLValue, into binds: inout PostgresBindings) {
        switch value {
        case .null: binds.appendNull()
        case let .integer(number): binds.append(number)
        case let .real(number): binds.append(number)
        case let .text(text): binds.append(text.string)
        case let .blob(bytes): binds.append(ByteBuffer(bytes: bytes))
        }
    }

    /// The request as its parts, for logs and errors.
    public var description: String {
        var parts: [String] = []
        if let sql {
            parts.append("sql: \(sql)")
        } else {
            parts.append("table: \(table)")
            if let filter { parts.append("filter: \(filter)") }
            if !sort.isEmpty { parts.append("sort: " + sort.map(\.description).joined(separator: ", ")) }
        }
        if let identity { parts.append("identity: \(identity)") }
        if let section { parts.append("section: \(section)") }
        if let version { parts.append("version: \(version)") }
        return "PostgresLiveQueryRequest(" + parts.joined(separator: "; ") + ")"
    }
}

extension PostgresLiveQueryRequest {
    /// `sql` with its `:name` placeholders numbered `$1`, `$2`… in the order their names first
    /// appear (a name used twice is one argument), and the names in that order; `::` casts,
    /// strings, quoted names and comments are left as they are. `nil` when the SQL cannot be read
    /// (PostgreSQL will say why when it runs).
    /// - Complexity: O(n) for n bytes.
    public static func numberingPlaceholders(in sql: String) -> (sql: String, names: [String])? {
        guard let tokens = try? PostgresSQLTokenizer.tokens(sql) else { return nil }
        var bytes = Array(sql.utf8)
        var names: [String] = []
        var replacements: [(Range<Int>, [UInt8])] = []
        for (index, token) in tokens.enumerated() where token.isPunctuation == ":" && index + 1 < tokens.count {
            let next = tokens[index + 1]
            guard next.range.lowerBound == token.range.upperBound, case .identifier(_, false) = next.kind else { continue }
            if index > 0, tokens[index - 1].range.upperBound == token.range.lowerBound, tokens[index - 1].isPunctuation == ":" { continue }
            // The name as written: parameters are named case for case (`:ownerId` is not `:ownerid`).
            let name = String(decoding: bytes[next.range], as: UTF8.self)
            if !names.contains(name) { names.append(name) }
            let number = (names.firstIndex(of: name) ?? 0) + 1
            replacements.append((token.range.lowerBound..<next.range.upperBound, Array("$\(number)".utf8)))
        }
        for (range, text) in replacements.reversed() { bytes.replaceSubrange(range, with: text) }
        return (String(decoding: bytes, as: UTF8.self), names)
    }
}

