import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GRDB
import Testing

@Suite("livelist serve", .serialized)
struct ServeCommandTests {
    static func database() throws -> String {
        let path = try CommandRunner.temporaryFile("", name: "served.sqlite")
        try FileManager.default.removeItem(atPath: path)
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE message(id INTEGER PRIMARY KEY, owner TEXT, folder TEXT, subject TEXT)")
            try db.execute(sql: "INSERT INTO message(owner, folder, subject) VALUES ('ada', 'inbox', 'hello')")
        }
        return path
    }

    @Test("A configuration file with a missing field, an undeclared placeholder or a claim without tokens is one clear line and exit status 2")
    func badConfigurations() async throws {
        let database = try Self.database()
        let cases: [(String, String)] = [
            ("queries:\n  - name: inbox\n", "missing \"sql\""),
            ("queries:\n  - name: inbox\n    sql: SELECT * FROM message WHERE owner = :owner\n", "uses :owner but declares no parameter \"owner\""),
            ("queries:\n  - name: inbox\n    sql: SELECT * FROM message WHERE owner = :owner\n    parameters:\n      - { name: owner, type: text, claim: sub }\n",
             "binds a parameter to a token claim, but no tokens are configured"),
            ("queries:\n  - name: inbox\n    sql: SELECT * FROM message\n    parameters:\n      - { name: owner, type: txt }\n", "queries.[0].parameters.[0].type"),
            ("queries: []\nmutations:\n  - name: drop\n    statements:\n      - sql: DELETE FROM message WHERE id = :id\n",
             "mutation \"drop\" uses :id but declares no parameter \"id\""),
            ("queries: []\nmutations:\n  - name: drop\n    parameters:\n      - { name: id, type: integer }\n    statements:\n      - sql: DELETE FROM message\n",
             "mutation \"drop\" declares \"id\", which its statements do not use"),
            ("queries: []\nmutations:\n  - name: drop\n    statements: []\n", "mutation \"drop\" has no statements"),
            ("queries: []\nmutations:\n  - name: drop\n    statements:\n      - sql: DELETE FROM message\n  - name: drop\n    statements:\n      - sql: DELETE FROM message\n",
             "the mutation \"drop\" is published twice"),
            ("queries: []\nmutations:\n  - name: drop\n    statements:\n      - { sql: DELETE FROM message, mustChangeRows: maybe }\n",
             "mutations.[0].statements.[0].mustChangeRows"),
        ]
        for (yaml, expected) in cases {
            let file = try CommandRunner.temporaryFile(yaml, name: "serve.yaml")
            let result = try await CommandRunner.run(["serve", "--config", file, "--db", database, "--port", "0"])
            #expect(result.status == 2, "\(yaml)")
            #expect(result.standardError.contains(expected), "\(result.standardError)")
            #expect(result.standardError.split(separator: "\n").count == 1, "\(result.standardError)")
        }
    }

    @Test("A configuration file with tokens serves, answers its health check, and stops with status 0 on SIGTERM")
    func servesFromConfiguration() async throws {
        let database = try Self.database()
        let yaml = """
            database: \(URL(fileURLWithPath: database).lastPathComponent)
            tokens:
              hmacSecretEnvironment: LIVELIST_TEST_SECRET
            queries:
              - name: mine
                sql: SELECT id, subject FROM message WHERE owner = :owner AND folder = :folder ORDER BY id
                parameters:
                  - { name: owner, type: text, claim: sub }
                  - { name: folder, type: text, default: inbox }
            """
        let file = URL(fileURLWithPath: database).deletingLastPathComponent().appendingPathComponent("serve.yaml")
        try Data(yaml.utf8).write(to: file)
        let process = Process()
        process.executableURL = CommandRunner.executable
        process.arguments = ["serve", "--config", file.path, "--port", "0"]
        process.environment = ProcessInfo.processInfo.environment.merging(["LIVELIST_TEST_SECRET": String(repeating: "s", count: 40)]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // The first line names the bound port and the published queries.
        let text = await CommandRunner.firstLine(of: output.fileHandleForReading, within: 60)
        #expect(text.contains("(mine)"), "\(text)")
        let address = try #require(text.range(of: "ws://127.0.0.1:"))
        let port = try #require(Int(text[address.upperBound...].prefix { $0.isNumber }))
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/live/health"))
        let (data, _) = try await URLSession.shared.data(from: url)
        let health = String(decoding: data, as: UTF8.self)
        #expect(health.contains("\"status\":\"ok\""))
        #expect(await CommandRunner.terminate(process) == 0)
    }

    @Test("livelist demo --remote shows a `serve --demo` server's list headlessly: batches applied, a script, 0 inconsistencies against a fresh subscription, exit 0")
    func remoteDemo() async throws {
        let directory = URL(fileURLWithPath: try CommandRunner.temporaryFile("", name: "placeholder")).deletingLastPathComponent()
        let server = Process()
        server.executableURL = CommandRunner.executable
        server.arguments = ["serve", "--demo", "--db", directory.appendingPathComponent("demo.sqlite").path, "--rows", "3000",
                            "--writes-per-second", "80", "--port", "0"]
        let output = Pipe()
        server.standardOutput = output
        try server.run()
        defer { if server.isRunning { server.terminate() } }
        let text = await CommandRunner.firstLine(of: output.fileHandleForReading, within: 120)
        let address = try #require(text.range(of: "ws://127.0.0.1:"))
        let port = try #require(Int(text[address.upperBound...].prefix { $0.isNumber }))
        let result = try await CommandRunner.run(["demo", "--remote", "ws://127.0.0.1:\(port)/live", "--headless", "--duration", "3"])
        let lines = result.standardOutput.split(separator: "\n")
        #expect(result.status == 0, "\(result.standardOutput.suffix(2_000)) \(result.standardError)")
        let summary = try #require(lines.last.map(String.init))
        #expect(summary.hasPrefix("demo: ") && summary.contains(" 0 inconsistencies"), "\(summary)")
        #expect(!summary.hasPrefix("demo: 0 batches"), "\(summary)")
        #expect(lines.contains { $0.hasPrefix("script: filter") } && lines.contains { $0.hasPrefix("script: sort") })
        // The script's actions are the server's mutations: each answered (a row the server's writer
        // archived meanwhile is refused), the new conversation applied once.
        for name in ["setUnread", "archive", "send"] {
            #expect(lines.contains { $0.hasPrefix(name + " ") && ($0.contains(": applied") || $0.contains(": refused, conflict")) },
                    "\(name): \(lines.filter { $0.hasPrefix(name) })")
        }
        // The server's writer goes on: wait for its lock as any other process would.
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let sent = try await DatabaseQueue(path: directory.appendingPathComponent("demo.sqlite").path, configuration: configuration).read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM conversation WHERE subject = ?", arguments: ["from the terminal demo: e\u{301} \u{E9} 😀"])
        }
        #expect(sent == 1)
        #expect(await CommandRunner.terminate(server) == 0)
    }

    @Test("livelist demo --remote with no server there is one line naming the address, and exit status 2")
    func remoteDemoWithoutServer() async throws {
        let result = try await CommandRunner.run(["demo", "--remote", "ws://127.0.0.1:9/live", "--headless", "--duration", "1"])
        #expect(result.status == 2)
        #expect(result.standardError.contains("ws://127.0.0.1:9/live"), "\(result.standardError)")
        #expect(result.standardError.split(separator: "\n").count == 1, "\(result.standardError)")
    }
}
