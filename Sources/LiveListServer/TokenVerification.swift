import Foundation
import JWTKit
import LiveListWire

/// Bearer tokens (JWT) checked before the WebSocket upgrade: an upgrade without a valid,
/// unexpired token is refused (HTTP 400, the WebSocket layer's answer to a refused upgrade; a plain
/// request of the endpoint gets 401), and one whose token expires while it is open is closed
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
    /// The `alg` a token's header must name (`nil`: any but `none`, the keys deciding).
    public var algorithm: String?
    /// The audience a token's `aud` must hold (`nil`: `aud` is not checked).
    public var audience: String?
    /// The issuer a token's `iss` must be (`nil`: `iss` is not checked).
    public var issuer: String?

    /// Verifies tokens with `keys`. What is checked: the signature; the header's `alg` (never
    /// `none`; `algorithm` when given); `exp`, required and in the future; `nbf`, when present,
    /// in the past; `aud` and `iss` when `audience` and `issuer` are given.
    public init(keys: JWTKeyCollection, algorithm: String? = nil, audience: String? = nil, issuer: String? = nil) {
        self.keys = keys
        self.algorithm = algorithm
        self.audience = audience
        self.issuer = issuer
    }

    /// The verified claims of `token`.
    func verify(_ token: String) async throws(TokenRejection) -> LiveListClaims {
        let named = Self.algorithm(of: token)
        guard let named, named.lowercased() != "none" else { throw TokenRejection(reason: "its header names no signing algorithm") }
        if let algorithm, named != algorithm {
            throw TokenRejection(reason: "it is signed with \(named), and this server accepts \(algorithm) only")
        }
        let claims: LiveListClaims
        do {
            claims = try await keys.verify(token, as: LiveListClaims.self)
        } catch {
            throw TokenRejection(reason: "\(error)")
        }
        if let audience, !claims.audiences.contains(audience) {
            throw TokenRejection(reason: "its audience (aud) is not \(audience)")
        }
        if let issuer, claims.values["iss"] != .text(issuer) {
            throw TokenRejection(reason: "its issuer (iss) is not \(issuer)")
        }
        return claims
    }

    /// The `alg` of `token`'s header (`nil` when the header cannot be read).
    static func algorithm(of token: String) -> String? {
        guard let encoded = token.split(separator: ".", omittingEmptySubsequences: false).first else { return nil }
        var base64 = encoded.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
              let header = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return header["alg"] as? String
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
    /// The token's audiences: its `aud`, one string or an array of them (empty without `aud`).
    public var audiences: [String] = []

    /// Claims for signing a token (servers that issue their own).
    public init(expiration: Date, values: [String: WireValue], audiences: [String] = []) {
        self.expiration = expiration
        self.values = values
        self.audiences = audiences
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
        let audience = Key(stringValue: "aud")
        if let many = try? container.decode([String].self, forKey: audience) {
            audiences = many
        } else if let one = try? container.decode(String.self, forKey: audience) {
            audiences = [one]
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (name, value) in values where name != "exp" && !(name == "aud" && !audiences.isEmpty) {
            switch value {
            case let .integer(number): try container.encode(number, forKey: Key(stringValue: name))
            case let .real(number): try container.encode(number, forKey: Key(stringValue: name))
            case let .text(text): try container.encode(text, forKey: Key(stringValue: name))
            case .null, .blob: continue
            }
        }
        try container.encode(ExpirationClaim(value: expiration), forKey: Key(stringValue: "exp"))
        if !audiences.isEmpty { try container.encode(audiences, forKey: Key(stringValue: "aud")) }
    }

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try ExpirationClaim(value: expiration).verifyNotExpired()
        // `nbf`, when the token has one: not valid before it.
        switch values["nbf"] {
        case let .integer(seconds)?: try NotBeforeClaim(value: Date(timeIntervalSince1970: TimeInterval(seconds))).verifyNotBefore()
        case let .real(seconds)?: try NotBeforeClaim(value: Date(timeIntervalSince1970: seconds)).verifyNotBefore()
        default: break
        }
    }
}
