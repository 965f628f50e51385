/// An error the server reports in a message; the connection stays open and the client's other
/// subscriptions go on. In JSON: `{"type":"error","sub":N,"code":"…","message":"…"}` (`sub`
/// absent when the error concerns no subscription).
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The subscription concerned.
    public var sub: Int?
    /// What kind of error.
    public var code: WireErrorCode
    /// Words for a developer, never for parsing.
    public var message: String

    /// Creates an error message.
    public init(sub: Int?, code: WireErrorCode, message: String) {
        self.sub = sub
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    var members: [JSONValue.Member] {
        [.init(key: "type", value: "error"), .init(key: "code", value: .string(code.rawValue)), .init(key: "message", value: .string(message))]
    }

    init(_ fields: _Fields) throws(WireDecodingError) {
        sub = fields.value("sub") == nil ? nil : try fields.int("sub")
        guard let code = WireErrorCode(rawValue: try fields.string("code")) else { throw .invalidField("code", "unknown error code") }
        self.code = code
        message = try fields.string("message", maximumLength: 65_536)
    }
}

/// The kinds of ``WireError``. After every code but ``queryFailed`` the subscription does not
/// exist (or no longer does); after ``queryFailed`` it goes on and recovers with a reset.
public enum WireErrorCode: String, Hashable, Sendable, CaseIterable {
    /// No published query has this name.
    case unknownQuery
    /// An argument is missing, unknown, of the wrong type, or bound by the token's claims.
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
