/// An error the server reports in a message; the connection stays open and the client's other
/// subscriptions go on. In JSON: `{"type":"error","sub":N,"code":"…","message":"…"}` (`sub`
/// absent when the error concerns no subscription). An error answering a `mutate` names it:
/// `{"type":"error","mutation":{"client":"…","id":7},"code":"conflict","message":"…"}`.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The subscription concerned.
    public var sub: Int?
    /// What kind of error.
    public var code: WireErrorCode
    /// Words for a developer, never for parsing.
    public var message: String
    /// The mutation answered (its client and number), when the error answers a `mutate`.
    public var mutation: WireMutationID?

    /// Creates an error message.
    public init(sub: Int?, code: WireErrorCode, message: String, mutation: WireMutationID? = nil) {
        self.sub = sub
        self.code = code
        self.message = message
        self.mutation = mutation
    }

    public var description: String { "\(code.rawValue): \(message)" }

    var members: [JSONValue.Member] {
        var members: [JSONValue.Member] = [.init(key: "type", value: "error")]
        if let mutation {
            members.append(.init(key: "mutation", value: .object([
                .init(key: "client", value: .string(mutation.client)), .init(key: "id", value: .integer(mutation.id)),
            ])))
        }
        return members + [.init(key: "code", value: .string(code.rawValue)), .init(key: "message", value: .string(message))]
    }

    init(_ fields: Fields) throws(WireDecodingError) {
        sub = fields.value("sub") == nil ? nil : try fields.int("sub")
        guard let code = WireErrorCode(rawValue: try fields.string("code")) else { throw .invalidField("code", "unknown error code") }
        self.code = code
        message = try fields.string("message", maximumLength: 65_536)
        if let mutation = fields.value("mutation") {
            let mutationFields: Fields
            do {
                mutationFields = try Fields(mutation)
            } catch {
                throw .invalidField("mutation", "expected an object")
            }
            guard case let .integer(id) = try mutationFields.required("id") else { throw .invalidField("mutation.id", "expected an integer") }
            self.mutation = WireMutationID(client: try mutationFields.string("client", maximumLength: 128), id: id)
        }
    }
}

/// A mutation as errors name it: its client and number.
public struct WireMutationID: Hashable, Sendable, CustomStringConvertible {
    /// The client, as the mutation named it.
    public var client: String
    /// The mutation's number.
    public var id: Int64

    /// Names a mutation.
    public init(client: String, id: Int64) {
        self.client = client
        self.id = id
    }

    public var description: String { "\(client)#\(id)" }
}

/// The kinds of ``WireError``. After every code but ``queryFailed`` the subscription does not
/// exist (or no longer does); after ``queryFailed`` it goes on and recovers with a reset. The
/// codes from ``unknownMutation`` on answer a `mutate` (as ``badArguments`` may).
public enum WireErrorCode: String, Hashable, Sendable, CaseIterable {
    /// No published query has this name.
    case unknownQuery
    /// An argument is missing, unknown, of the wrong type, or bound by the token's claims (a
    /// `mutate`'s: refused, its number used).
    case badArguments
    /// The window is not `[start ≥ 0, count ≥ 0]`.
    case badWindow
    /// The window is larger than the server allows.
    case windowTooLarge
    /// The connection has as many subscriptions as the server allows.
    case tooManySubscriptions
    /// No subscription has this number on the connection.
    case unknownSubscription
    /// A subscription with this number is open on the connection.
    case duplicateSubscription
    /// The query failed on the server (the database is busy, gone, or its schema changed); a
    /// subscription that goes on receives a reset when the query recovers.
    case queryFailed
    /// The query stopped for good on the server; the subscription is closed.
    case queryClosed
    /// A resume named a version this server has not reached within its wait (another server
    /// showed it): the subscription does not exist; subscribe again later, here or elsewhere.
    case behind
    /// No published mutation has this name: refused, its number used (sent again, it gets this
    /// error again).
    case unknownMutation
    /// The mutation was refused by the database (a constraint, a failing statement): rolled back,
    /// and its number used — sending it again gets this error again.
    case mutationFailed
    /// A precondition of the mutation failed (a statement that must change a row changed none,
    /// or the app's code said so): rolled back, its number used, as for ``mutationFailed``.
    case conflict
    /// The mutation's number is not the client's next one (a number was skipped): nothing was
    /// applied; send the missing ones first. The message names the number expected.
    case mutationOutOfOrder
    /// The mutation could not run now (the database was busy or unreachable, or the server is
    /// shutting down): nothing was applied and its number is not used; send it again.
    case mutationUnavailable
    /// The mutation needs a token claim the connection does not have: refused, its number used.
    case unauthorized
}

/// WebSocket close codes the server uses (RFC 6455 §7.4 and the private range).
public enum WireCloseCode: UInt16, Hashable, Sendable, CaseIterable {
    /// The server is shutting down; reconnect (to another instance) and resume.
    case goingAway = 1001
    /// A frame was not a message of the protocol; the reason says why.
    case protocolError = 1002
    /// A binary frame: the protocol is JSON text.
    case unsupportedData = 1003
    /// A text message that is not UTF-8.
    case invalidText = 1007
    /// A frame was larger than the server accepts.
    case messageTooBig = 1009
    /// The server failed unexpectedly.
    case internalError = 1011
    /// The token expired or was revoked while the connection was open; reconnect with a new one.
    case tokenExpired = 4001
}
