import ArgumentParser
import Foundation
import GRDB
import LiveListCommands
import LiveListServer
import LiveListServerSQLite
import LiveListServerPostgres
import LiveListTools
import LiveListWire
import LiveQuery
import LiveQueryPostgres
import PostgresNIO
import Logging

/// `livelist serve`: published live queries over WebSocket.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve live queries over WebSocket (the protocol of docs/PROTOCOL.md).",
        discussion: """
            With --demo, serves the inbox demo database (created when missing) with its live writer, as the query "inbox"
            (arguments "sort": "activity", "sender" or "unread", and "filter": text the sender or the subject contains), and
            the mutations "setUnread" (id, unread 0 or 1), "archive" (id) and "send" (sender, subject). Otherwise publish queries over --db with --query NAME=SQL
            (":name" placeholders become parameters of any type) and optionally --section NAME=COLUMN. The endpoint is
            ws://HOST:PORT/live; its health GET /live/health (always 200: what it holds, whether it is ready and why not),
            /live/health/live (liveness) and /live/health/ready (readiness: 503 while a published query fails, or the server is
            more than --max-lag seconds or --max-lag-bytes behind the database); its metrics GET /metrics (Prometheus' text
            format). Running instances for operators: docs/OPERATIONS.md. SIGINT or SIGTERM shut down gracefully.

            With --postgres URL (postgres://user:password@host:port/database), the queries (and the demo's table) are PostgreSQL's,
            followed through logical decoding; several instances may serve one database, and a client resumes on any of them.
            Give each instance a persistent replication slot with --slot NAME to survive its restarts (drop the slots of retired
            instances: see docs/POSTGRESQL.md).

            With --config FILE, the queries are a YAML file's: "queries", a list of queries, each a "name", a "sql" SELECT
            with ":name" placeholders, optionally "identity", "section" and "version", and "parameters" (each a "name", a
            "type" — integer, real, text, blob or any — and a "default" or a token "claim"); optionally "mutations", a list
            of mutations, each a "name", "parameters" as a query's, and "statements" (each a "sql" with ":name"
            placeholders, and "mustChangeRows": true to refuse the mutation with conflict when it changes no row), run in
            one transaction once per client and number; optionally "database", the
            SQLite file (relative to FILE; --db overrides it), and "tokens" with "hmacSecretEnvironment", the environment
            variable that holds the HS256 secret of the bearer tokens (32 bytes or more), and optionally "audience" and
            "issuer", the aud and iss every token must carry (exp is required, nbf checked when present). The schema, its
            checks and examples: docs/SERVER.md.

            Limits: a client message is at most 65,536 bytes (close 1009), JSON text in UTF-8 (1003, 1007); the upgrade
            request's head must arrive within 10 s, an idle HTTP connection closes after 30 s, a WebSocket is pinged every
            30 s; on SIGINT or SIGTERM clients are closed with 1001 and every connection within 5 s. The protocol, its
            codes and limits: docs/PROTOCOL.md.
            """
    )

    @Option(help: "The SQLite database to serve.") var db: String?
    @Option(help: "The PostgreSQL database to serve: postgres://user:password@host:port/database.") var postgres: String?
    @Option(help: "PostgreSQL: a persistent replication slot for this instance (default: a temporary one).") var slot: String?
    @Option(help: "A YAML file of published queries and mutations (\"queries\", \"mutations\", \"database\", \"tokens\"): see docs/SERVER.md.") var config: String?
    @Flag(help: "Serve the inbox demo database with its live writer.") var demo = false
    @Option(help: "Conversations to generate in a new demo database.") var rows = 100_000
    @Option(help: "Changes the demo writer makes per second (0: no writer).") var writesPerSecond = 40
    @Option(help: "A published query, NAME=SQL (repeatable).") var query: [String] = []
    @Option(help: "The section column of a published query, NAME=COLUMN (repeatable).") var section: [String] = []
    @Flag(help: "Accept permessage-deflate (RFC 7692) from clients that offer it: fewer bytes, more CPU per connection.") var perMessageDeflate = false
    @Option(help: "The address to listen on.") var host = "127.0.0.1"
    @Option(help: "The port to listen on (0: any free port).") var port = 8080
    @Option(help: "Readiness (GET /live/health/ready) turns 503 past this many seconds behind the database, or this long without its change capture.")
    var maxLag = 3.0
    @Option(help: "Readiness turns 503 past this many bytes of PostgreSQL's WAL not applied.") var maxLagBytes: UInt64 = 64 << 20
    @Option(help: "PostgreSQL: the watchdog reconnects a replication stream this many seconds behind the WAL without progress.")
    var stallBound = 10.0
    @Option(help: "The log level: trace, debug, info, notice, warning, error or critical.") var logLevel = "info"

    func validate() throws {
        guard demo || db != nil || postgres != nil || config != nil else { throw ValidationError("give --db PATH, --postgres URL, --config FILE or --demo") }
        guard db == nil || postgres == nil else { throw ValidationError("give --db PATH or --postgres URL, not both") }
        guard postgres != nil || slot == nil else { throw ValidationError("--slot names a PostgreSQL replication slot: give --postgres URL") }
        guard demo || !query.isEmpty || config != nil else { throw ValidationError("publish at least one --query NAME=SQL, or give --config FILE") }
        guard !(demo && config != nil) else { throw ValidationError("--demo serves its own queries: leave out --config") }
        guard writesPerSecond >= 0 else { throw ValidationError("--writes-per-second must not be negative") }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        guard maxLag > 0, maxLag.isFinite else { throw ValidationError("--max-lag must be a positive number of seconds") }
        guard stallBound > 0, stallBound.isFinite else { throw ValidationError("--stall-bound must be a positive number of seconds") }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    func run() throws {
        let file = try config.map { path throws(InputError) in (path, try ServeConfiguration.load(path)) }
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var configuration = LiveListServer.Configuration()
        configuration.perMessageDeflate = perMessageDeflate
        configuration.maximumLag = .milliseconds(Int64(maxLag * 1_000))
        configuration.maximumLagBytes = maxLagBytes
        if let (path, file) = file {
            configuration.tokens = try waitFor { () async throws -> TokenVerification? in try await file.tokenVerification(path: path) }
        }
        if let postgres {
            try servePostgres(url: postgres, file: file, configuration: configuration)
            return
        }
        let (database, queries, writer) = try open(file)
        let mutations = demo ? DemoMutations.published(for: .sqlite) : file?.1.publishedMutations ?? []
        let server = LiveListServer(database: database, queries: queries, mutations: mutations, configuration: configuration)
        try run(server, queries: queries) { await writer?.stop() }
    }

    /// Serves until SIGINT or SIGTERM, then runs `finally`.
    private func run(_ server: LiveListServer, queries: [PublishedQuery], finally: @escaping @Sendable () async -> Void) throws {
        let (host, port, demo) = (host, port, demo)
        try waitFor {
            let app = server.application(host: host, port: port, demoPage: demo) { bound in
                var line = "livelist serve: ws://\(host):\(bound)/live (\(queries.map(\.name).sorted().joined(separator: ", ")))\n"
                if demo { line += "livelist serve: the live list in a browser: http://\(host):\(bound)/\n" }
                for report in await server.mutationEffectsReport() { line += "livelist serve: \(report)\n" }
                FileHandle.standardOutput.write(Data(line.utf8))
            }
            do {
                try await app.runService()
            } catch {
                await finally()
                throw error
            }
            await finally()
        }
    }

    /// `--postgres`: the published queries (or the demo's) over PostgreSQL.
    private func servePostgres(url: String, file: (path: String, configuration: ServeConfiguration)?, configuration: LiveListServer.Configuration) throws {
        let connection: PostgresConnection.Configuration
        do {
            connection = try PostgresLiveDatabase.configuration(url: url)
        } catch {
            throw InputError("--postgres: \(error)")
        }
        var queries = try publishedQueries()
        if let file { queries += file.configuration.published }
        if demo { queries = [PostgresInbox.inbox] }
        let slot: PostgresLiveDatabase.Slot = slot.map { .persistent($0) } ?? .temporary
        let (rows, writesPerSecond, demo) = (rows, writesPerSecond, demo)
        let stallBound = Duration.milliseconds(Int64(self.stallBound * 1_000))
        let database = try waitFor { () async throws -> PostgresLiveDatabase in
            if demo { try await PostgresInbox.prepare(connection, rows: rows) }
            do {
                return try await PostgresLiveDatabase.connect(connection, slot: slot, stallBound: stallBound)
            } catch {
                throw InputError("cannot follow PostgreSQL: \(error)")
            }
        }
        let writer = demo && writesPerSecond > 0 ? PostgresDemoWriter(configuration: connection, writesPerSecond: writesPerSecond, seed: 1) : nil
        let mutations = demo ? DemoMutations.published(for: .postgres) : file?.configuration.publishedMutations ?? []
        let engine = PostgresEngine(database: database)
        let server = LiveListServer(engine: engine, queries: queries, mutations: mutations, configuration: configuration)
        try run(server, queries: queries) {
            await writer?.stop()
            await engine.close()
            await database.close()
        }
    }

    private func open(_ file: (path: String, configuration: ServeConfiguration)?) throws -> (any DatabaseWriter, [PublishedQuery], DemoWriter?) {
        guard demo else {
            var queries = try publishedQueries()
            var path = db
            if let file {
                queries += file.configuration.published
                if path == nil, let relative = file.configuration.database {
                    path = URL(fileURLWithPath: relative, relativeTo: URL(fileURLWithPath: file.path).deletingLastPathComponent()).path
                }
            }
            guard let path else { throw InputError("give --db PATH, or \"database\" in the configuration file") }
            guard FileManager.default.fileExists(atPath: path) else { throw InputError("no database at \(path)") }
            let database: DatabasePool
            do {
                database = try DatabasePool(path: path)
            } catch {
                throw InputError("cannot open the database at \(path): \(error)")
            }
            return (database, queries, nil)
        }
        let path = db ?? FileManager.default.temporaryDirectory.appendingPathComponent("livelist-serve-demo.sqlite").path
        let database = try InboxDatabase.open(path: path, rows: rows, seed: 1)
        do {
            try database.write { db in try ChangeTracking.install(on: db, tables: ["conversation"]) }
        } catch {
            throw InputError("cannot install the change log in \(path): \(error)")
        }
        var writer: DemoWriter?
        if writesPerSecond > 0 {
            writer = DemoWriter()
            writer?.start(database: database, writesPerSecond: writesPerSecond, seed: 1)
        }
        let inbox = PublishedQuery(name: "inbox", parameters: [
            QueryParameter("sort", type: .text, default: .text("activity")),
            QueryParameter("filter", type: .text, default: .text("")),
        ]) { arguments in
            let (order, section) = switch arguments["sort"] {
            case .text("sender")?: ("sender COLLATE NOCASE, last_activity DESC, id", nil as String?)
            case .text("unread")?: ("unread DESC, last_activity DESC, id", "unread")
            default: ("day DESC, last_activity DESC, id", "day")
            }
            // The local demo's filter: the text anywhere in the sender or the subject.
            var filter = ""
            var bound = StatementArguments()
            if case let .text(text)? = arguments["filter"], !text.isEmpty {
                filter = " AND (sender LIKE :pattern OR subject LIKE :pattern)"
                bound = ["pattern": "%\(text)%"]
            }
            return LiveQueryRequest(sql: "SELECT id, sender, subject, unread, last_activity, day, version FROM conversation WHERE archived = 0\(filter) ORDER BY \(order)",
                                    arguments: bound, as: SQLValue.self, section: section, version: "version")
        }
        return (database, [inbox], writer)
    }

    private func publishedQueries() throws -> [PublishedQuery] {
        var sections: [String: String] = [:]
        for entry in section {
            guard let equals = entry.firstIndex(of: "=") else { throw InputError("--section \(entry): expected NAME=COLUMN") }
            sections[String(entry[..<equals])] = String(entry[entry.index(after: equals)...])
        }
        return try query.map { entry in
            guard let equals = entry.firstIndex(of: "=") else { throw InputError("--query \(entry): expected NAME=SQL") }
            let name = String(entry[..<equals])
            let sql = String(entry[entry.index(after: equals)...])
            let parameters = ServeConfiguration.placeholders(in: sql).map { QueryParameter($0, type: .any) }
            return PublishedQuery(name: name, sql: sql, parameters: parameters, section: sections[name])
        }
    }
}
