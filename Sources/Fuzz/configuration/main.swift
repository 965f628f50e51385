import FuzzSupport
import LiveListCommands
import LiveListServer

// `livelist serve --config FILE`: the YAML (Yams) decoded into the configuration and checked —
// names unique, every `:name` placeholder a declared parameter and every parameter used, claims
// only with tokens — then published as queries and mutations. Configuration is trusted, but a
// mistake in it must be one clear line naming the file, never a crash. (The SQL it holds is the
// SQL fuzz targets' to read.) An input is the file's text.

FuzzTarget.main { bytes in
    let configuration: ServeConfiguration
    do throws(InputError) {
        configuration = try ServeConfiguration.read(String(decoding: bytes, as: UTF8.self), path: "fuzz.yaml")
    } catch {
        precondition(error.description.hasPrefix("fuzz.yaml: "), "a problem that does not name the file: \(error)")
        return
    }
    let queries = configuration.published
    let mutations = configuration.publishedMutations
    precondition(Set(queries.map(\.name)).count == queries.count && Set(mutations.map(\.name)).count == mutations.count)
    for query in queries {
        guard case let .sql(sql, _, _, _) = query.definition else { preconditionFailure("\(query.name) is not SQL") }
        precondition(Set(ServeConfiguration.placeholders(in: sql)) == Set(query.parameters.map(\.name)), "\(query.name)'s parameters")
    }
    for mutation in mutations {
        guard case let .statements(statements) = mutation.definition, !statements.isEmpty else { preconditionFailure("\(mutation.name)") }
        let used = Set(statements.flatMap { ServeConfiguration.placeholders(in: $0.sql) })
        precondition(used == Set(mutation.parameters.map(\.name)), "\(mutation.name)'s parameters")
    }
}
