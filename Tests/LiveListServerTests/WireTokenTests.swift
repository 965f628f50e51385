import Foundation
import GRDB
import JWTKit
import LiveListServer
import LiveListWire
import Testing

@Suite("Bearer tokens", .serialized)
struct WireTokenTests {
    static func keys(_ secret: String) async -> JWTKeyCollection {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return keys
    }

    static func token(folder: String, expiresIn seconds: Double, secret: String = "a server secret of at least thirty-two bytes") async throws -> String {
        try await keys(secret).sign(LiveListClaims(expiration: Date().addingTimeInterval(seconds), values: ["folder": .text(folder), "sub": .text("ada")]))
    }

    static func start() async throws -> WireFixture {
        var configuration = LiveListServer.Configuration()
        configuration.tokens = TokenVerification(keys: await keys("a server secret of at least thirty-two bytes"))
        let mine = PublishedQuery(name: "mine", sql: WireFixture.inboxSQL, parameters: [QueryParameter("folder", type: .text, claim: "folder")], section: "day")
        return try await WireFixture.start(rows: 200, seed: 5, configuration: configuration, queries: [mine])
    }

    static let subscribe = #"{"type":"subscribe","sub":1,"query":"mine","window":[0,500]}"#

    @Test("No token, a token signed with another key and an expired token are refused before the upgrade")
    func refused() async throws {
        let fixture = try await Self.start()
        await #expect(throws: (any Error).self) { _ = try await exchange(fixture.url, [Self.subscribe], answers: 1) }
        let forged = try await Self.token(folder: "inbox", expiresIn: 60, secret: "another secret of at least thirty-two bytes!")
        await #expect(throws: (any Error).self) { _ = try await exchange(fixture.url, [Self.subscribe], answers: 1, token: forged) }
        let expired = try await Self.token(folder: "inbox", expiresIn: -60)
        await #expect(throws: (any Error).self) { _ = try await exchange(fixture.url, [Self.subscribe], answers: 1, token: expired) }
        await fixture.stop()
    }

    @Test("A token not valid yet (nbf), one whose header names another algorithm or none, and one for another audience or issuer are refused; the right ones pass")
    func claimsChecked() async throws {
        let secret = "a server secret of at least thirty-two bytes"
        var configuration = LiveListServer.Configuration()
        configuration.tokens = TokenVerification(keys: await Self.keys(secret), algorithm: "HS256", audience: "inbox-app", issuer: "https://auth.test")
        let mine = PublishedQuery(name: "mine", sql: WireFixture.inboxSQL, parameters: [QueryParameter("folder", type: .text, claim: "folder")], section: "day")
        let fixture = try await WireFixture.start(rows: 20, seed: 6, configuration: configuration, queries: [mine])
        func token(_ extra: [String: WireValue], audiences: [String] = ["inbox-app"]) async throws -> String {
            var values: [String: WireValue] = ["folder": .text("inbox"), "iss": .text("https://auth.test")]
            values.merge(extra) { $1 }
            return try await Self.keys(secret).sign(LiveListClaims(expiration: Date().addingTimeInterval(60), values: values, audiences: audiences))
        }
        let good = try await token([:])
        let (messages, _) = try await exchange(fixture.url, [Self.subscribe], answers: 1, token: good)
        #expect(messages.first?.contains(#""type":"reset""#) ?? false)
        let notYet = try await token(["nbf": .integer(Int64(Date().timeIntervalSince1970) + 3_600)])
        let otherAudience = try await token([:], audiences: ["another-app"])
        let otherIssuer = try await token(["iss": .text("https://elsewhere.test")])
        // The same claims and signature under a header that names another algorithm, or none.
        func withHeader(_ header: String, _ token: String) -> String {
            let encoded = Data(header.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            return ([encoded] + token.split(separator: ".").dropFirst().map(String.init)).joined(separator: ".")
        }
        let otherAlgorithm = withHeader(#"{"alg":"HS512","typ":"JWT"}"#, good)
        let none = withHeader(#"{"alg":"none","typ":"JWT"}"#, good)
        for (what, refused) in [("nbf", notYet), ("aud", otherAudience), ("iss", otherIssuer), ("alg HS512", otherAlgorithm), ("alg none", none)] {
            await #expect(throws: (any Error).self, "\(what)") { _ = try await exchange(fixture.url, [Self.subscribe], answers: 1, token: refused) }
        }
        await fixture.stop()
    }

    @Test("The token's claim binds the parameter: each user sees only their folder's rows, and cannot name another")
    func claimsBindParameters() async throws {
        let fixture = try await Self.start()
        for folder in ["inbox", "archive"] {
            let token = try await Self.token(folder: folder, expiresIn: 60)
            let frames = [Self.subscribe, #"{"type":"subscribe","sub":2,"query":"mine","arguments":{"folder":"inbox"},"window":[0,5]}"#]
            let (messages, _) = try await exchange(fixture.url, frames, answers: 2, token: token)
            let decoded = try messages.map { try ServerMessage.decode(Array($0.utf8)) }
            let expected = try fixture.select(folder: folder)
            let reset = try #require(decoded.compactMap { if case let .reset(reset) = $0 { reset } else { nil } }.first)
            #expect(reset.sections == expected.sections)
            #expect(reset.rows.map { $0.values ?? [] } == expected.rows)
            #expect(decoded.contains { if case let .error(error) = $0 { error.code == .badArguments && error.sub == 2 } else { false } })
        }
        await fixture.stop()
    }

    @Test("A connection whose token expires is closed with 4001")
    func expiry() async throws {
        let fixture = try await Self.start()
        let token = try await Self.token(folder: "inbox", expiresIn: 1.5)
        let (_, close) = try await exchange(fixture.url, [Self.subscribe], answers: 0, token: token)
        #expect(close == WireCloseCode.tokenExpired.rawValue)
        await fixture.stop()
    }
}
