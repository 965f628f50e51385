import Foundation

/// Why a ``LiveQueryRequest`` cannot be opened: each case names what was given and says what to
/// do. Thrown as ``LiveQueryError/invalidRequest(_:)`` by ``LiveQuery/open(_:in:options:callbackQueue:onEvent:)``,
/// ``LiveQuery/setRequest(_:)`` and ``LiveQuery/explain(_:in:)`` before anything is observed.
///
/// Switch over it to react to a specific mistake; its `description` is the message for a person.
public enum InvalidRequest: Sendable, Hashable, CustomStringConvertible {
    /// Which part of a request an expression or column was given for.
    public enum Role: String, Sendable, Hashable {
        /// The expression or column that identifies rows.
        case identity
        /// The expression or column that groups rows into sections.
        case section
        /// The expression or column whose change means a row's content changed.
        case version
    }

    /// The SQL is not a SELECT (it writes, or returns no column).
    case notASelect(sql: String)
    /// A GRDB request could not produce its SQL (`message` is the error it threw).
    case cannotCompile(message: String)
    /// A GRDB request with `including(all:)` (a prefetch of to-many associations): its children
    /// come from a second query that a live query cannot follow.
    case prefetchesToMany
    /// The section, identity or version names no column of the query's tables (nor of its result).
    case noSuchColumn(role: Role, name: String, available: [String])
    /// The section is a column of the query, but not its first ORDER BY term (sections appear in
    /// sort order). `firstTerm` is the term that is first, `nil` when there is no ORDER BY.
    case sectionNotFirstSortTerm(section: String, firstTerm: String?)
    /// The named identity has no UNIQUE constraint or primary key on it alone.
    case identityNotUnique(identity: String, table: String)
    /// The named identity is a column of a joined table, which several result rows can meet.
    case identityInJoinedTable(identity: String, table: String, base: String)
    /// No identity was named and the rows have none by default (a result of a SELECT LiveList
    /// runs as written, a table whose columns hide its rowid, or a composite primary key).
    case identityRequired(table: String?, because: IdentityRequirement, available: [String])
    /// The identity is an integer (a rowid or INTEGER PRIMARY KEY) and the declared identity type
    /// cannot hold integers. `named` is the identity the request gave, `nil` for the default.
    case integerIdentity(named: String?, table: String, declared: String)
    /// The identity's stored values are of a storage class the declared type never decodes.
    case identityTypeMismatch(identity: String, found: SQLStorageClass, examples: [SQLValue], declared: String)
    /// A join meets several rows of a table per base row, so the base table's key repeats in the
    /// result and cannot identify rows.
    case oneToManyJoin(joined: String, base: String, identity: String?)
    /// The identity, section or version is not an expression SQLite accepts over the query's
    /// tables (`message` is SQLite's).
    case invalidExpression(message: String, sql: String)
    /// The definition of a unique index could not be read from the schema.
    case unreadableUniqueIndex(index: String, table: String)

    /// Why a request must name its identity.
    public enum IdentityRequirement: String, Sendable, Hashable {
        /// The SELECT is run as written (GROUP BY, DISTINCT, compound…): its rows come from no single table.
        case computedRows = "its rows are computed (not rows of one table)"
        /// The table's columns are named rowid, _rowid_ and oid.
        case rowidHidden = "its columns hide the rowid"
        /// A WITHOUT ROWID table whose primary key has several columns.
        case compositePrimaryKey = "it is a WITHOUT ROWID table with a composite primary key"
    }

    public var description: String {
        switch self {
        case let .notASelect(sql):
            return "a live query needs a SELECT that returns columns: \(sql)"
        case let .cannotCompile(message):
            return "the request cannot be compiled: \(message)"
        case .prefetchesToMany:
            return "the request prefetches to-many associations (including(all:)) with a second query that a live query cannot follow: "
                + "list the children in a live query of their own, or use including(required:)/including(optional:) for to-one associations"
        case let .noSuchColumn(role, name, available):
            return "the \(role.rawValue) \(name) is not a column of the query" + (available.isEmpty ? "" : " (columns: \(available.joined(separator: ", ")))")
        case let .sectionNotFirstSortTerm(section, firstTerm):
            guard let firstTerm else { return "the section \(section) must be the first ORDER BY term, and the query has no ORDER BY: add ORDER BY \(section)" }
            return "the section \(section) must be the first ORDER BY term, but the first term is \(firstTerm): order by \(section) first"
        case let .identityNotUnique(identity, table):
            return "the identity \(identity) of \(table) has no UNIQUE constraint or primary key on it alone: name a unique column, or add a UNIQUE index on it"
        case let .identityInJoinedTable(identity, table, base):
            return "the identity \(identity) is a column of the joined table \(table), which several result rows can meet: name a unique column of \(base)"
        case let .identityRequired(table, because, available):
            return "name the identity: \(table.map { "the rows of \($0)" } ?? "the rows") have none by default (\(because.rawValue)); pass identity: with a column whose value is unique in the result"
                + (available.isEmpty ? "" : " (columns: \(available.joined(separator: ", ")))")
        case let .integerIdentity(named, table, declared):
            let what = named.map { "the identity \($0) is the rowid of \(table)" } ?? "rows of \(table) are identified by their rowid"
            return "\(what), an integer, which \(declared) cannot hold: declare as: Int64.self"
                + (named == nil ? ", or name an identity column whose values are \(declared)s" : ", or name another column whose values are \(declared)s")
        case let .identityTypeMismatch(identity, found, examples, declared):
            return "the identity \(identity) holds \(found) values (\(examples.map(\.description).joined(separator: ", "))), which \(declared) cannot hold: declare as: "
                + Self.suggestedIdentityType(found, examples)
        case let .oneToManyJoin(joined, base, identity):
            return "the join with \(joined) can meet several of its rows per row of \(base) (a one-to-many join: its ON clause has no equality on a unique column of \(joined)), "
                + "so \(identity ?? "the key of \(base)") is not unique in the result: name a unique column of \(joined) as the identity, or join it many-to-one"
        case let .invalidExpression(message, sql):
            return "the identity, section or version is not an expression of the query's tables (\(message)): \(sql)"
        case let .unreadableUniqueIndex(index, table):
            return "cannot read the definition of unique index \(index) on \(table)"
        }
    }
}

extension InvalidRequest {
    /// The identity type that holds values like `examples`: UUID for 16-byte blobs (GRDB stores
    /// UUIDs so) and 36-character texts that read as UUIDs, else the storage class's own type.
    static func suggestedIdentityType(_ found: SQLStorageClass, _ examples: [SQLValue]) -> String {
        let allUUIDs = !examples.isEmpty && examples.allSatisfy { UUID(identityValue: $0) != nil }
        switch found {
        case .blob where allUUIDs: return "UUID.self (16-byte values), or Data.self"
        case .text where allUUIDs: return "String.self, or UUID.self (the values read as UUIDs)"
        default: return found.suggestedIdentityType + ".self"
        }
    }
}

/// SQLite's storage classes: how a value is stored, whatever the column's declared type.
public enum SQLStorageClass: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// NULL.
    case null = "NULL"
    /// A signed integer of up to 8 bytes.
    case integer = "INTEGER"
    /// An 8-byte IEEE floating point number.
    case real = "REAL"
    /// Text, as bytes (UTF-8 unless another program wrote otherwise).
    case text = "TEXT"
    /// Bytes, as given.
    case blob = "BLOB"

    /// The storage class of `value`.
    public init(of value: SQLValue) {
        switch value {
        case .null: self = .null
        case .integer: self = .integer
        case .real: self = .real
        case .text: self = .text
        case .blob: self = .blob
        }
    }

    public var description: String { rawValue }

    /// The identity type to declare for values of this class.
    var suggestedIdentityType: String {
        switch self {
        case .integer: "Int64"
        case .text: "String"
        case .blob: "Data"
        case .null, .real: "SQLValue"
        }
    }
}
