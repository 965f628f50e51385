import ArgumentParser
import Foundation
import GRDB
import LiveListServer
import LiveListTools
import LiveListWire
import LiveQuery
import Logging

/// `livelist serve`: published live queries over WebSocket.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve live queries over WebSocket (the protocol of docs/PROTOCOL.md).",
        discussion: """
            With --demo, serves the inbox demo database (created when missing) with its live writer, as the query "inbox"
            (arguments "sort": "activity", "sender" or "unread", and "filter": text the sender or the subject contains). Otherwise publish queries over --db with --query NAME=SQL
            (":name" placeholders become parameters of any type) and optionally --section NAME=COLUMN. The endpoint is
            ws://HOST:PORT/live, its health GET /live/health. SIGINT or SIGTERM shut down gracefully.
            """
    )

    @Option(help: "The SQLite database to serve.") var db: String?
    @Option(help: "A YAML file of published queries (and token verification).") var config: String?
    @Flag(help: "Serve the inbox demo database with its live writer.") var demo = false
    @Option(help: "Conversations to generate in a new demo database.") var rows = 100_000
    @Option(help: "Changes the demo writer makes per second (0: no writer).") var writesPerSecond = 40
    @Option(help: "A published query, NAME=SQL (repeatable).") var query: [String] = []
    @Option(help: "The section column of a published query, NAME=COLUMN (repeatable).") var section: [String] = []
    @Flag(help: "Accept permessage-deflate (RFC 7692) from clients that offer it: fewer bytes, more CPU per connection.") var perMessageDeflate = false
    @Option(help: "The address to listen on.") var host = "127.0.0.1"
    @Option(help: "The port to listen on (0: any free port).") var port = 8080

    func validate() throws {
        guard demo || db != nil || config != nil else { throw ValidationError("give --db PATH, --config FILE or --demo") }
        guard demo || !query.isEmpty || config != nil else { throw ValidationError("publish at least one --query NAME=SQL, or give --config FILE") }
        guard !(demo && config != nil) else { throw ValidationError("--demo serves its own queries: leave out --config") }
        guard writesPerSecond >= 0 else { throw ValidationError("--writes-per-second must not be negative") }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0...65535") }
    }

    func run() throws {
        let file = try config.map { path throws(InputError) in (path, try ServeConfiguration.load(path)) }
        let (database, queries, writer) = try open(file)
        var configuration = LiveListServer.Configuration()
        configuration.perMessageDeflate = perMessageDeflate
        if let (path, file) = file {
            configuration.tokens = try waitFor { () async throws -> TokenVerification? in try await file.tokenVerification(path: path) }
        }
        let server = LiveListServer(database: database, queries: queries, configuration: configuration)
        let host = host
        try waitFor {
            let app = server.application(host: host, port: port, demoPage: demo) { bound in
                var line = "livelist serve: ws://\(host):\(bound)/live (\(queries.map(\.name).sorted().joined(separator: ", ")))\n"
                if demo { line += "livelist serve: the live list in a browser: http://\(host):\(bound)/\n" }
                FileHandle.standardOutput.write(Data(line.utf8))
            }
            try await app.runService()
            await writer?.stop()
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
            let parameters = Self.placeholders(in: sql).map { QueryParameter($0, type: .any) }
            return PublishedQuery(name: name, sql: sql, parameters: parameters, section: sections[name])
        }
    }

    /// The `:name` placeholders of `sql`, outside string literals.
    static func placeholders(in sql: String) -> [String] {
        var names: [String] = []
        var inString = false
        var index = sql.startIndex
        while index < sql.endIndex {
            let character = sql[index]
            if character == "'" { inString.toggle() }
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
}
