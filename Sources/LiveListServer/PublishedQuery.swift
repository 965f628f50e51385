import LiveListWire
import LiveQueryCore

/// A query the server publishes under a name. Clients name it and give arguments for its
/// parameters; they never send SQL.
///
/// ```swift
/// import LiveListServer
///
/// let publishedInbox = PublishedQuery(
///     name: "inbox",
///     sql: "SELECT id, sender, subject, day FROM message WHERE folder = :folder ORDER BY day DESC, sender",
///     parameters: [QueryParameter("folder", type: .text)],
///     section: "day")
/// ```
public struct PublishedQuery: Sendable {
    /// What the query shows.
    public enum Definition: Sendable {
        /// A SELECT whose `:name` placeholders are the parameters, for any engine; `identity`,
        /// `section` and `version` are read as the engine reads a local request's.
        case sql(String, identity: String?, section: String?, version: String?)
        /// A SELECT made from the arguments, for any engine: for a query whose shape (its sort, say)
        /// depends on them.
        case madeSQL(@Sendable (_ arguments: [String: WireValue]) throws -> SQL)
        /// A request in one engine's own terms, made from the arguments: for SQLite, a GRDB-built
        /// `LiveQueryRequest<SQLValue>` (`PublishedQuery(name:parameters:request:)` of
        /// LiveListServerSQLite). Another engine refuses it with `queryFailed`.
        case engineRequest(@Sendable (_ arguments: [String: WireValue]) throws -> any Sendable)
    }

    /// A SELECT as an engine runs it: its `:name` placeholders' values, and how its rows are
    /// identified, grouped and versioned.
    public struct SQL: Sendable, Hashable {
        /// The SELECT, with `:name` placeholders.
        public var text: String
        /// The values of its `:name` placeholders.
        public var arguments: [String: WireValue]
        /// The column that identifies rows (`nil`: the engine's default).
        public var identity: String?
        /// The column that groups rows into sections (`nil`: one section).
        public var section: String?
        /// An expression that changes whenever a row's content does (`nil`: a digest of the row).
        public var version: String?

        /// A SELECT.
        public init(_ text: String, arguments: [String: WireValue] = [:], identity: String? = nil, section: String? = nil, version: String? = nil) {
            self.text = text
            self.arguments = arguments
            self.identity = identity
            self.section = section
            self.version = version
        }

        /// What it says, the same on every server: part of the name of its versions, so that a
        /// client never resumes a list of another definition.
        var summary: String {
            ([text, identity ?? "", section ?? "", version ?? ""] + arguments.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })
                .joined(separator: "\u{1}")
        }
    }

    /// The SELECT for validated `arguments` (`nil` for an engine's own request).
    public func sql(for arguments: [String: WireValue]) throws -> SQL? {
        switch definition {
        case let .sql(text, identity, section, version):
            SQL(text, arguments: arguments, identity: identity, section: section, version: version)
        case let .madeSQL(make):
            try make(arguments)
        case .engineRequest:
            nil
        }
    }

    /// The name clients subscribe to.
    public var name: String
    /// What clients must (or may) give.
    public var parameters: [QueryParameter]
    /// What it shows.
    public var definition: Definition

    /// Publishes a SELECT made from the arguments (one for each parameter, by name), for any engine.
    public init(name: String, parameters: [QueryParameter] = [], sql: @escaping @Sendable (_ arguments: [String: WireValue]) throws -> SQL) {
        self.name = name
        self.parameters = parameters
        definition = .madeSQL(sql)
    }

    /// Publishes a query of any definition; see ``Definition``.
    public init(name: String, parameters: [QueryParameter] = [], definition: Definition) {
        self.name = name
        self.parameters = parameters
        self.definition = definition
    }

    /// Publishes a SELECT whose `:name` placeholders are the parameters; `identity`, `section`
    /// and `version` name result columns as for a local live query (the identity defaults to the
    /// base table's rowid, or primary key).
    public init(name: String, sql: String, parameters: [QueryParameter] = [], identity: String? = nil,
                section: String? = nil, version: String? = nil) {
        self.name = name
        self.parameters = parameters
        definition = .sql(sql, identity: identity, section: section, version: version)
    }

    /// The arguments checked against the parameters: every required one given, none unknown,
    /// each of its type; defaults filled in; parameters bound to a claim taken from `claims`
    /// (and refused from the client).
    package func validate(_ arguments: [String: WireValue], claims: [String: WireValue]?) throws(WireError) -> [String: WireValue] {
        try parameters.validate(arguments, claims: claims, of: "query \"\(name)\"", missingClaim: .badArguments)
    }
}

extension [QueryParameter] {
    /// `arguments` checked against these parameters (of `owner`, as messages name it): every
    /// required one given, none unknown, each of its type; defaults filled in; parameters bound to
    /// a claim taken from `claims` (and refused from the client; a missing claim is `missingClaim`).
    func validate(_ arguments: [String: WireValue], claims: [String: WireValue]?, of owner: String,
                  missingClaim: WireErrorCode) throws(WireError) -> [String: WireValue] {
        var checked: [String: WireValue] = [:]
        for name in arguments.keys where !contains(where: { $0.name == name }) {
            throw WireError(sub: nil, code: .badArguments, message: "\(owner) has no parameter \"\(name)\"")
        }
        for parameter in self {
            if let claim = parameter.claim {
                guard arguments[parameter.name] == nil else {
                    throw WireError(sub: nil, code: .badArguments, message: "argument \"\(parameter.name)\" comes from the token, not the client")
                }
                guard let value = claims?[claim], parameter.type.accepts(value) else {
                    throw WireError(sub: nil, code: missingClaim, message: "the token has no claim \"\(claim)\" of type \(parameter.type)")
                }
                checked[parameter.name] = value
                continue
            }
            guard let value = arguments[parameter.name] ?? parameter.defaultValue else {
                throw WireError(sub: nil, code: .badArguments, message: "missing argument \"\(parameter.name)\"")
            }
            // A NULL default (set in Swift; a config file has none) makes a parameter optional.
            guard parameter.type.accepts(value) || (arguments[parameter.name] == nil && value == .null) else {
                throw WireError(sub: nil, code: .badArguments, message: "argument \"\(parameter.name)\" must be \(parameter.type)")
            }
            checked[parameter.name] = value
        }
        return checked
    }
}

/// A parameter of a published query.
public struct QueryParameter: Sendable, Hashable {
    /// The kinds of values a parameter accepts.
    public enum ValueType: String, Sendable, Hashable, Codable, CustomStringConvertible {
        /// `integer` accepts INTEGER values, `real` REAL and INTEGER ones, `text` TEXT, `blob`
        /// BLOB; `any` accepts every value, NULL included.
        case integer, real, text, blob, any
        func accepts(_ value: WireValue) -> Bool {
            switch (self, value) {
            case (.any, _), (.integer, .integer), (.real, .real), (.real, .integer), (.text, .text), (.blob, .blob): true
            default: false
            }
        }
        public var description: String { rawValue }
    }

    /// The placeholder's name (`:name` in the SQL).
    public var name: String
    /// What it accepts.
    public var type: ValueType

    /// The storage classes of the values it may take (a NULL default adds NULL): what an engine
    /// needs to state a statement's effect exactly.
    package var valueClasses: Set<SQLStorageClass> {
        var classes: Set<SQLStorageClass> = switch type {
        case .integer: [.integer]
        case .real: [.integer, .real]
        case .text: [.text]
        case .blob: [.blob]
        case .any: Set(SQLStorageClass.allCases)
        }
        if defaultValue == .null { classes.insert(.null) }
        return classes
    }
    /// Its value when a client gives none (`nil`: required). A `.null` default makes a
    /// parameter of any type optional; another default its type does not accept refuses the
    /// requests that rely on it.
    public var defaultValue: WireValue?
    /// The token claim the value comes from (`nil`: the client gives it). A client may not give
    /// a bound parameter, and a connection without the claim may not subscribe.
    public var claim: String?

    /// Creates a parameter given by clients.
    public init(_ name: String, type: ValueType, default defaultValue: WireValue? = nil) {
        self.name = name
        self.type = type
        self.defaultValue = defaultValue
    }

    /// Creates a parameter whose value is the token's claim `claim` (see ``TokenVerification``).
    public init(_ name: String, type: ValueType, claim: String) {
        self.name = name
        self.type = type
        self.claim = claim
    }
}
