import Foundation
import JWTKit
import LiveListWire

/// Bearer tokens (JWT) checked before the WebSocket upgrade: a connection without a valid,
/// unexpired token is refused with 401, and one whose token expires while it is open is closed
/// with ``LiveListWire/WireCloseCode/tokenExpired``. The token's claims fill the parameters bound
/// to them (``QueryParameter/claim``), so a user sees only their rows whatever they send.
///
/// Clients send the token as `Authorization: Bearer <token>`, or — browsers cannot set headers on
/// a WebSocket — as the `access_token` query parameter of the URL.
///
/// ```swift
/// import JWTKit
/// import LiveListServer
///
/// func verifiedServerConfiguration(secret: String) async -> LiveListServer.Configuration {
///     let keys = JWTKeyCollection()
///     await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
///     var configuration = LiveListServer.Configuration()
///     configuration.tokens = TokenVerification(keys: keys)
///     return configuration
/// }
/// ```
public struct TokenVerification: Sendable {
    /// The keys tokens are verified with.
    public let keys: JWTKeyCollection

    /// Verifies tokens with `keys` (their `exp` claim is required).
    public init(keys: JWTKeyCollection) {
        self.keys = keys
    }

    /// The verified claims of `token`.
    func verify(_ token: String) async throws(TokenRejection) -> LiveListClaims {
        do {
            return try await keys.verify(token, as: LiveListClaims.self)
        } catch {
            throw TokenRejection(reason: "\(error)")
        }
    }
}

/// Why a token was refused.
struct TokenRejection: Error, CustomStringConvertible {
    var reason: String
    var description: String { "invalid token: \(reason)" }
}

/// A token's claims: its expiry, and every claim whose value is a string, a number or a boolean
/// (booleans as integers 0 and 1), for the parameters bound to them.
public struct LiveListClaims: JWTPayload, Sendable {
    /// When the token expires.
    public var expiration: Date
    /// Every claim with a scalar value, by name (`exp` included, in seconds).
    public var values: [String: WireValue]

    /// Claims for signing a token (servers that issue their own).
    public init(expiration: Date, values: [String: WireValue]) {
        self.expiration = expiration
        self.values = values
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        var values: [String: WireValue] = [:]
        for key in container.allKeys {
            if let number = try? container.decode(Int64.self, forKey: key) {
                values[key.stringValue] = .integer(number)
            } else if let number = try? container.decode(Double.self, forKey: key) {
                values[key.stringValue] = .real(number)
            } else if let flag = try? container.decode(Bool.self, forKey: key) {
                values[key.stringValue] = .integer(flag ? 1 : 0)
            } else if let text = try? container.decode(String.self, forKey: key) {
                values[key.stringValue] = .text(text)
            }
        }
        let expiry = try container.decode(ExpirationClaim.self, forKey: Key(stringValue: "exp"))
        expiration = expiry.value
        self.values = values
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (name, value) in values where name != "exp" {
            switch value {
            case let .integer(number): try container.encode(number, forKey: Key(stringValue: name))
            case let .real(number): try container.encode(number, forKey: Key(stringValue: name))
            case let .text(text): try container.encode(text, forKey: Key(stringValue: name))
            case .null, .blob: continue
            }
        }
        try container.encode(ExpirationClaim(value: expiration), forKey: Key(stringValue: "exp"))
    }

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try ExpirationClaim(value: expiration).verifyNotExpired()
    }
}
