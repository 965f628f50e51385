import GRDB
import LiveListServer
import LiveListWire
import LiveQuery

/// A mutation's code for ``SQLiteEngine``: given the transaction's `Database` and the checked
/// arguments. Throwing `MutationRefusal.conflict(_:)` refuses it with `conflict`; a
/// `DatabaseError` refuses it with `mutationFailed`; either way its changes are rolled back.
public struct SQLiteMutation: Sendable {
    /// The code, given the transaction's `Database` and the checked arguments.
    public let body: @Sendable (_ db: Database, _ arguments: [String: WireValue]) throws -> Void

    /// Wraps `body`.
    public init(_ body: @escaping @Sendable (_ db: Database, _ arguments: [String: WireValue]) throws -> Void) {
        self.body = body
    }
}

extension PublishedMutation {
    /// Publishes Swift code run in the mutation's transaction (``SQLiteMutation``).
    /// ``SQLiteEngine`` runs it; an engine of another database refuses it with `mutationFailed`.
    ///
    /// ```swift
    /// import GRDB
    /// import LiveListServer
    /// import LiveListServerSQLite
    /// import LiveListWire
    ///
    /// let publishedSend = PublishedMutation(name: "send", parameters: [QueryParameter("subject", type: .text)]) { db, arguments in
    ///     switch arguments["subject"] {
    ///     case let .text(subject)? where !subject.isEmpty:
    ///         try db.execute(sql: "INSERT INTO message (subject) VALUES (?)", arguments: [subject])
    ///     default:
    ///         throw MutationRefusal.conflict("a message needs a subject")
    ///     }
    /// }
    /// ```
    public init(name: String, parameters: [QueryParameter] = [],
                perform: @escaping @Sendable (_ db: Database, _ arguments: [String: WireValue]) throws -> Void) {
        self.init(name: name, parameters: parameters, definition: .engineMutation(SQLiteMutation(perform)))
    }
}

extension SQLiteEngine {
    /// Runs `request` once, in one immediate transaction with its ledger (``MutationLedger``'s
    /// tables, created in the database when missing).
    public func perform(_ request: MutationRequest) async throws -> MutationOutcome {
        do {
            return try await database.writeWithoutTransaction { db in
                var outcome = MutationOutcome.applied
                try db.inTransaction(.immediate) {
                    outcome = try Self.perform(request, in: db)
                    return .commit
                }
                return outcome
            }
        } catch let error as DatabaseError where Self.isTransient(error) {
            throw WireError(sub: nil, code: .mutationUnavailable, message: "the database is busy: \(error.message ?? "\(error)")")
        }
    }

    private static func isTransient(_ error: DatabaseError) -> Bool {
        [.SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_INTERRUPT].contains(error.resultCode)
    }

    private static func perform(_ request: MutationRequest, in db: Database) throws -> MutationOutcome {
        // Created once: a statement that creates a table, even one that exists, reads as a schema
        // change to the live queries' tracking.
        if try !db.tableExists(MutationLedger.clientsTable) || !db.tableExists(MutationLedger.refusalsTable) {
            for statement in MutationLedger.createStatements { try db.execute(sql: statement) }
        }
        let owner: StatementArguments = [request.principal, request.client]
        let last = try Int64.fetchOne(db, sql: MutationLedger.lastIDSQL, arguments: owner) ?? 0
        var recorded: MutationRefusal?
        if request.id <= last {
            recorded = try Row.fetchOne(db, sql: MutationLedger.refusalSQL, arguments: owner + [request.id]).map { row in
                MutationRefusal(storedCode: row["code"], message: row["message"])
            }
        }
        switch MutationStep(id: request.id, last: last, refusal: recorded) {
        case let .outOfOrder(expected):
            throw request.outOfOrder(expected: expected)
        case let .answer(outcome):
            return outcome
        case .apply:
            var refusal: MutationRefusal?
            switch request.action {
            case let .refuse(refused):
                refusal = refused
            case let .run(mutation, arguments):
                do {
                    try db.inSavepoint {
                        try run(mutation, arguments, in: db)
                        return .commit
                    }
                } catch let error as MutationRefusal {
                    refusal = error
                } catch let error as DatabaseError where isTransient(error) {
                    throw error
                } catch let error as DatabaseError {
                    refusal = .failed(error.message ?? "\(error)")
                } catch {
                    // The app's code threw something else: refused, as the database would.
                    refusal = .failed("\(error)")
                }
            }
            try db.execute(sql: MutationLedger.recordIDSQL, arguments: owner + [request.id])
            guard let refusal else { return .applied }
            try db.execute(sql: MutationLedger.recordRefusalSQL, arguments: owner + [request.id, refusal.code.rawValue, refusal.message])
            try db.execute(sql: MutationLedger.pruneRefusalsSQL, arguments: owner + [request.id - MutationStep.outcomesKept])
            return .refused(refusal)
        }
    }

    /// Runs the mutation's statements (or code) in the savepoint.
    private static func run(_ mutation: PublishedMutation, _ arguments: [String: WireValue], in db: Database) throws {
        switch mutation.definition {
        case let .statements(statements):
            // Bound by their bytes: text holding NUL is stored whole.
            let arguments = arguments.mapValues(\.sql)
            for (index, statement) in statements.enumerated() {
                try db.execute(sql: statement.sql, exactly: arguments)
                if statement.mustChangeRows, db.changesCount == 0 {
                    throw MutationRefusal.conflict("statement \(index + 1) of mutation \"\(mutation.name)\" changed no row")
                }
            }
        case let .engineMutation(code):
            guard let code = code as? SQLiteMutation else {
                throw MutationRefusal.failed("mutation \"\(mutation.name)\" is another engine's code, not a SQLiteMutation")
            }
            try code.body(db, arguments)
        }
    }
}

extension SQLiteEngine {
    /// What `mutation`'s statements do, read from the database's schema (its tables' columns,
    /// defaults, collations and triggers): stated when each is a single-row INSERT … VALUES, an
    /// UPDATE … SET … WHERE or a DELETE … WHERE whose conditions compare columns with values or
    /// parameters without conversion. A mutation written as code states nothing.
    public func effects(of mutation: PublishedMutation) async -> MutationEffects {
        guard case let .statements(statements) = mutation.definition else { return .unstated(.notStatements) }
        let parameters = Dictionary(mutation.parameters.map { ($0.name, $0.valueClasses) }, uniquingKeysWith: { first, _ in first })
        do {
            return try await database.read { db in
                try SQLiteMutationEffects.effects(of: statements.map(\.sql), parameters: parameters, in: db)
            }
        } catch {
            return .unstated(.schemaUnreadable("\(error)"))
        }
    }
}
