import LiveListWire

/// A mutation the server publishes under a name: what clients may change, as published queries
/// are what they may read. Clients name it and give arguments for its parameters; they never
/// send SQL. The server runs it in one transaction, once per (client, mutation number), and
/// answers `mutated` after the client's lists were sent its commit.
///
/// ```swift
/// import LiveListServer
///
/// let publishedArchive = PublishedMutation(
///     name: "archive",
///     parameters: [QueryParameter("id", type: .integer), QueryParameter("owner", type: .text, claim: "sub")],
///     statements: [.init("UPDATE message SET folder = 'archive' WHERE id = :id AND owner = :owner", mustChangeRows: true)])
/// ```
public struct PublishedMutation: Sendable {
    /// One statement of a mutation, with `:name` placeholders for the parameters.
    public struct Statement: Sendable, Hashable {
        /// An INSERT, UPDATE, DELETE (or any statement the engine runs in a transaction).
        public var sql: String
        /// Whether changing no row is a conflict: the mutation is rolled back and the client gets
        /// `conflict` (the row it acts on is gone, or is not the caller's).
        public var mustChangeRows: Bool

        /// A statement; `mustChangeRows`: changing no row refuses the mutation with `conflict`.
        public init(_ sql: String, mustChangeRows: Bool = false) {
            self.sql = sql
            self.mustChangeRows = mustChangeRows
        }
    }

    /// What the mutation does.
    public enum Definition: Sendable {
        /// Statements run in order in one transaction, for any engine.
        case statements([Statement])
        /// Code in one engine's own terms: for SQLite, a closure given GRDB's `Database` inside
        /// the transaction (`PublishedMutation(name:parameters:perform:)` of
        /// LiveListServerSQLite). Another engine refuses it with `mutationFailed`.
        case engineMutation(any Sendable)
    }

    /// The name clients send.
    public var name: String
    /// What clients must (or may) give; parameters bound to a claim come from the token.
    public var parameters: [QueryParameter]
    /// What it does.
    public var definition: Definition

    /// Publishes statements whose `:name` placeholders are the parameters, run in one transaction.
    public init(name: String, parameters: [QueryParameter] = [], statements: [Statement]) {
        self.name = name
        self.parameters = parameters
        definition = .statements(statements)
    }

    /// Publishes a mutation of any definition; see ``Definition``.
    public init(name: String, parameters: [QueryParameter] = [], definition: Definition) {
        self.name = name
        self.parameters = parameters
        self.definition = definition
    }

    /// The arguments checked against the parameters, as a query's are; a missing claim is
    /// `unauthorized`.
    package func validate(_ arguments: [String: WireValue], claims: [String: WireValue]?) throws(WireError) -> [String: WireValue] {
        try parameters.validate(arguments, claims: claims, of: "mutation \"\(name)\"", missingClaim: .unauthorized)
    }
}
