import LiveListWire

/// A mutation for an engine to perform (``LiveQueryEngine/perform(_:)``): what to do under the
/// client's number, and who sent it.
public struct MutationRequest: Sendable {
    /// What the number stands for.
    public enum Action: Sendable {
        /// Run `mutation` with its checked arguments (claims bound).
        case run(PublishedMutation, arguments: [String: WireValue])
        /// Record `refusal` under the number without running anything: the server refused the
        /// request itself (no such mutation, bad arguments, a claim missing). Sent again, it gets
        /// the same answer, and the client's next number follows it.
        case refuse(MutationRefusal)
    }

    /// What to do.
    public var action: Action
    /// Whose client this is: the token's `sub` claim, or the empty string without tokens.
    /// Mutation numbers are kept per (principal, client), so one user's client name never
    /// reaches another's numbers.
    public var principal: String
    /// The client's name for itself.
    public var client: String
    /// The mutation's number among the client's.
    public var id: Int64
    /// The mutation's name, as the client sent it (for messages).
    public var name: String

    /// The error for a number that is not the client's next (``MutationStep/outOfOrder(expected:)``).
    public func outOfOrder(expected: Int64) -> WireError {
        WireError(sub: nil, code: .mutationOutOfOrder, message: "mutation \(id) of client \"\(client)\" is not its next one: \(expected) is expected")
    }

    /// Creates a request.
    public init(action: Action, principal: String, client: String, id: Int64, name: String) {
        self.action = action
        self.principal = principal
        self.client = client
        self.id = id
        self.name = name
    }
}

/// How a mutation ended, kept in the database with it so that a resend gets the same answer.
public enum MutationOutcome: Sendable, Hashable {
    /// Committed now.
    case applied
    /// Committed when first sent; nothing changed now.
    case alreadyApplied
    /// Refused (now or when first sent): rolled back, its number used.
    case refused(MutationRefusal)
}

/// Why a mutation was refused for good, with the error code its client is sent: its own
/// precondition failed (`conflict`), the database refused it (`mutationFailed`), or the server
/// refused the request (`unknownMutation`, `badArguments`, `unauthorized`). A mutation's code
/// throws `MutationRefusal.conflict(_:)` to refuse it.
public struct MutationRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// The error code a client is sent.
    public var code: WireErrorCode
    /// Words for a developer: the database's message, or the precondition's.
    public var message: String

    /// The longest message kept, in Unicode scalars (code points: at most 2,000 bytes of UTF-8; a
    /// JavaScript client counts them as `[...message].length`, not `message.length`, which counts
    /// UTF-16 units): a refusal is stored with its mutation, and its message may echo what a
    /// client sent.
    public static let maximumMessageLength = 500

    /// A refusal; `message` is cut to ``maximumMessageLength`` Unicode scalars, the last of them
    /// `…` when it was cut.
    public init(code: WireErrorCode, message: String) {
        self.code = code
        let scalars = message.unicodeScalars
        self.message = scalars.count > Self.maximumMessageLength
            ? String(String.UnicodeScalarView(scalars.prefix(Self.maximumMessageLength - 1))) + "…" : message
    }

    /// A failed precondition (`conflict`).
    public static func conflict(_ message: String) -> MutationRefusal { MutationRefusal(code: .conflict, message: message) }
    /// The database's refusal (`mutationFailed`).
    public static func failed(_ message: String) -> MutationRefusal { MutationRefusal(code: .mutationFailed, message: message) }

    /// A refusal as a ledger stored it (its code's name; an unknown name reads as `mutationFailed`).
    public init(storedCode: String, message: String) {
        self.init(code: WireErrorCode(rawValue: storedCode) ?? .mutationFailed, message: message)
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// What an engine does with a mutation, decided from what its ledger holds for the client: the
/// number of the client's last mutation applied or refused, and the refusal recorded under the
/// mutation's number, if any. Engines read both in the mutation's transaction, then act on this.
public enum MutationStep: Sendable, Hashable {
    /// The client's next number: run it.
    case apply
    /// A number already used: answer as the first time, change nothing.
    case answer(MutationOutcome)
    /// A number past the next one, or one too old to answer for: refuse it (`expected` is the
    /// next).
    case outOfOrder(expected: Int64)

    /// How many of a client's latest numbers a ledger can answer for (their refusals are kept):
    /// a resend of an older one is refused as out of order. A client keeps fewer mutations
    /// pending.
    public static let outcomesKept: Int64 = 1_000

    /// The step for mutation `id` of a client whose last used number is `last` (0: none yet),
    /// with `refusal` recorded under `id`.
    public init(id: Int64, last: Int64, refusal: MutationRefusal?) {
        if id == last + 1 {
            self = .apply
        } else if id > last + 1 || id <= last - Self.outcomesKept {
            self = .outOfOrder(expected: last + 1)
        } else if let refusal {
            self = .answer(.refused(refusal))
        } else {
            self = .answer(.alreadyApplied)
        }
    }
}

/// The tables an engine keeps its mutation ledger in, in the served database, created by the
/// engine when missing, before the first mutation runs. The names and columns are part of the documented contract.
public enum MutationLedger {
    /// One row per (principal, client): the last number used.
    public static let clientsTable = "livelist_mutation_client"
    /// One row per refused mutation among each client's latest ``MutationStep/outcomesKept``
    /// (`code`: the error code's name).
    public static let refusalsTable = "livelist_mutation_refusal"

    /// The statements that create the tables (SQL both SQLite and PostgreSQL accept).
    public static let createStatements = [
        """
        CREATE TABLE IF NOT EXISTS \(clientsTable) (
            principal TEXT NOT NULL, client TEXT NOT NULL, last_id BIGINT NOT NULL, PRIMARY KEY (principal, client))
        """,
        """
        CREATE TABLE IF NOT EXISTS \(refusalsTable) (
            principal TEXT NOT NULL, client TEXT NOT NULL, id BIGINT NOT NULL, code TEXT NOT NULL, message TEXT NOT NULL,
            PRIMARY KEY (principal, client, id))
        """,
    ]

    // The ledger's reads and writes, the same for every engine: `$1` the principal, `$2` the
    // client, then the values each names (SQLite binds `$n` in order, as PostgreSQL does).

    /// The client's row with `last_id` 0, when it has none (so that there is a row to lock).
    public static let ensureClientSQL = "INSERT INTO \(clientsTable) (principal, client, last_id) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING"
    /// The client's last number used (a row of `last_id`; none: 0).
    public static let lastIDSQL = "SELECT last_id FROM \(clientsTable) WHERE principal = $1 AND client = $2"
    /// The refusal recorded under number `$3` (a row of `code`, `message`; none: it was applied).
    public static let refusalSQL = "SELECT code, message FROM \(refusalsTable) WHERE principal = $1 AND client = $2 AND id = $3"
    /// Records `$3` as the client's last number used.
    public static let recordIDSQL = """
        INSERT INTO \(clientsTable) (principal, client, last_id) VALUES ($1, $2, $3)
        ON CONFLICT (principal, client) DO UPDATE SET last_id = excluded.last_id
        """
    /// Records the refusal of number `$3`: code `$4`, message `$5`.
    public static let recordRefusalSQL = "INSERT INTO \(refusalsTable) (principal, client, id, code, message) VALUES ($1, $2, $3, $4, $5)"
    /// Forgets the refusals of numbers up to `$3` (those past ``MutationStep/outcomesKept``).
    public static let pruneRefusalsSQL = "DELETE FROM \(refusalsTable) WHERE principal = $1 AND client = $2 AND id <= $3"
}
