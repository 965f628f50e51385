import Foundation
import JWTKit
import LiveListServer
import LiveListWire
import Yams

/// `livelist serve --config FILE`: the published queries, and how tokens are verified, in YAML.
///
/// ```yaml
/// database: inbox.sqlite            # relative to the file; --db overrides it
/// tokens:
///   hmacSecretEnvironment: LIVELIST_JWT_SECRET   # HS256, the secret read from this variable
///   audience: inbox-app                          # optional: the aud tokens must hold
///   issuer: https://auth.example.com             # optional: the iss tokens must have
/// queries:
///   - name: inbox
///     sql: SELECT id, sender, subject, day FROM message WHERE owner = :owner AND folder = :folder ORDER BY day DESC, sender
///     section: day
///     parameters:
///       - { name: owner, type: text, claim: sub }
///       - { name: folder, type: text, default: inbox }
/// mutations:
///   - name: archive
///     parameters:
///       - { name: id, type: integer }
///       - { name: owner, type: text, claim: sub }
///     statements:
///       - sql: UPDATE message SET folder = 'archive' WHERE id = :id AND owner = :owner
///         mustChangeRows: true
/// ```
package struct ServeConfiguration: Decodable {
    package struct Query: Decodable {
        var name: String
        var sql: String
        var identity: String?
        var section: String?
        var version: String?
        var parameters: [Parameter]?
    }

    package struct Mutation: Decodable {
        var name: String
        var parameters: [Parameter]?
        var statements: [Statement]
    }

    package struct Statement: Decodable {
        var sql: String
        var mustChangeRows: Bool?
    }

    package struct Parameter: Decodable {
        var name: String
        var type: QueryParameter.ValueType
        var `default`: String?
        var claim: String?
    }

    package struct Tokens: Decodable {
        var hmacSecretEnvironment: String
        var audience: String?
        var issuer: String?
    }

    package var database: String?
    package var tokens: Tokens?
    package var queries: [Query]
    package var mutations: [Mutation]?

    /// Reads `path`; every problem is one line naming the file.
    package static func load(_ path: String) throws(InputError) -> ServeConfiguration {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw InputError("cannot read \(path): \(error.localizedDescription)")
        }
        return try read(text, path: path)
    }

    /// Reads a configuration's text, checked as ``load(_:)`` checks a file's (`path` names it in
    /// messages).
    package static func read(_ text: String, path: String) throws(InputError) -> ServeConfiguration {
        let configuration: ServeConfiguration
        do {
            configuration = try YAMLDecoder().decode(ServeConfiguration.self, from: text)
        } catch let DecodingError.keyNotFound(key, context) {
            throw InputError("\(path): missing \"\(key.stringValue)\" at \(Self.where(context))")
        } catch let DecodingError.dataCorrupted(context) {
            throw InputError("\(path): \(context.debugDescription) at \(Self.where(context))")
        } catch let DecodingError.typeMismatch(_, context) {
            throw InputError("\(path): \(context.debugDescription) at \(Self.where(context))")
        } catch {
            throw InputError("\(path): \(error)")
        }
        var queryNames = Set<String>()
        for query in configuration.queries {
            try check("query", query.name, sql: [query.sql], which: "its SQL does", query.parameters, names: &queryNames, configuration, path: path)
        }
        var mutationNames = Set<String>()
        for mutation in configuration.mutations ?? [] {
            guard !mutation.statements.isEmpty else { throw InputError("\(path): mutation \"\(mutation.name)\" has no statements") }
            try check("mutation", mutation.name, sql: mutation.statements.map(\.sql), which: "its statements do", mutation.parameters,
                      names: &mutationNames, configuration, path: path)
        }
        return configuration
    }

    /// A published query's or mutation's checks: its name unique among its kind, every
    /// placeholder of its SQL a declared parameter and every parameter used, claims only with tokens.
    private static func check(_ kind: String, _ name: String, sql: [String], which user: String, _ parameters: [Parameter]?,
                              names: inout Set<String>, _ configuration: ServeConfiguration, path: String) throws(InputError) {
        guard names.insert(name).inserted else { throw InputError("\(path): the \(kind) \"\(name)\" is published twice") }
        let placeholders = Set(sql.flatMap(Self.placeholders(in:)))
        let declared = Set((parameters ?? []).map(\.name))
        if let missing = placeholders.subtracting(declared).sorted().first {
            throw InputError("\(path): \(kind) \"\(name)\" uses :\(missing) but declares no parameter \"\(missing)\"")
        }
        if let unused = declared.subtracting(placeholders).sorted().first {
            throw InputError("\(path): \(kind) \"\(name)\" declares \"\(unused)\", which \(user) not use")
        }
        if configuration.tokens == nil, (parameters ?? []).contains(where: { $0.claim != nil }) {
            throw InputError("\(path): \(kind) \"\(name)\" binds a parameter to a token claim, but no tokens are configured")
        }
    }

    private static func `where`(_ context: DecodingError.Context) -> String {
        context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    /// The `:name` placeholders of `sql`, outside string literals (a `::` cast is not one).
    package static func placeholders(in sql: String) -> [String] {
        var names: [String] = []
        var inString = false
        var index = sql.startIndex
        while index < sql.endIndex {
            let character = sql[index]
            if character == "'" { inString.toggle() }
            if !inString, character == ":", sql[sql.index(after: index)...].first == ":" {
                index = sql.index(index, offsetBy: 2)
                continue
            }
            if !inString, character == ":" {
                var end = sql.index(after: index)
                while end < sql.endIndex, sql[end].isLetter || sql[end].isNumber || sql[end] == "_" { end = sql.index(after: end) }
                let name = String(sql[sql.index(after: index)..<end])
                if !name.isEmpty, !names.contains(name) { names.append(name) }
                index = end
                continue
            }
            index = sql.index(after: index)
        }
        return names
    }

    /// The published queries.
    package var published: [PublishedQuery] {
        queries.map { query in
            PublishedQuery(name: query.name, sql: query.sql, parameters: (query.parameters ?? []).map(\.published), identity: query.identity,
                                  section: query.section, version: query.version)
        }
    }

    /// The published mutations.
    package var publishedMutations: [PublishedMutation] {
        (mutations ?? []).map { mutation in
            PublishedMutation(name: mutation.name, parameters: (mutation.parameters ?? []).map(\.published),
                              statements: mutation.statements.map { .init($0.sql, mustChangeRows: $0.mustChangeRows ?? false) })
        }
    }

    /// A default written in YAML as text, read as the parameter's type.
    fileprivate static func value(_ text: String, as type: QueryParameter.ValueType) -> WireValue {
        switch type {
        case .integer: Int64(text).map(WireValue.integer) ?? .text(text)
        case .real: Double(text).map(WireValue.real) ?? .text(text)
        default: .text(text)
        }
    }

    /// The token verification, with the secret from the environment.
    package func tokenVerification(path: String) async throws(InputError) -> TokenVerification? {
        guard let tokens else { return nil }
        guard let secret = ProcessInfo.processInfo.environment[tokens.hmacSecretEnvironment], secret.utf8.count >= 32 else {
            throw InputError("\(path): the environment variable \(tokens.hmacSecretEnvironment) must hold the HS256 secret (32 bytes or more)")
        }
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return TokenVerification(keys: keys, algorithm: "HS256", audience: tokens.audience, issuer: tokens.issuer)
    }
}


extension ServeConfiguration.Parameter {
    /// The parameter as the server publishes it.
    var published: QueryParameter {
        if let claim { return QueryParameter(name, type: type, claim: claim) }
        return QueryParameter(name, type: type, default: `default`.map { ServeConfiguration.value($0, as: type) })
    }
}
