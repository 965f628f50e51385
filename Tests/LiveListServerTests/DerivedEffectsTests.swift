import Foundation
import GRDB
import ListDiff
import ListTesting
import LiveListClient
import LiveListServer
import LiveListWire
import NIOConcurrencyHelpers
import PostgresNIO
import ScratchPostgres
import Testing

/// Pending rows the server derives (a reset's `effects`), end to end over SQLite and PostgreSQL: random
/// mutations the app describes no effect for, each held back on its way to the server while the
/// lists show what they expect; the expected lists must equal the lists the commit produces (or,
/// where an effect cannot be shown, the lists before), and the commit must land without a move,
/// an insert or a delete on a list that showed it. The same for the web client (livelist.js in
/// node: `Tests/Web/derived-oracle-client.mjs`), over SQLite and over PostgreSQL.
@Suite("Derived pending rows", .serialized, .timeLimit(.minutes(3)))
@MainActor
struct DerivedEffectsTests {
    /// A transport whose `mutate` frames wait while ``hold`` is set, until ``release()``.
    final class HoldingTransport: RemoteTransport, Sendable {
        private struct State {
            var holding = false
            var held: [(send: @Sendable (String) -> Void, frame: String)] = []
        }

        private let base = WebSocketTransport()
        private let state = NIOLockedValueBox(State())

        func hold() { state.withLockedValue { $0.holding = true } }
        var heldCount: Int { state.withLockedValue { $0.held.count } }

        func release() {
            let held = state.withLockedValue { state in
                state.holding = false
                defer { state.held = [] }
                return state.held
            }
            for (send, frame) in held { send(frame) }
        }

        func connect(to url: String) async throws -> RemoteConnection {
            let connection = try await base.connect(to: url)
            let state = state
            let send = connection.send
            return RemoteConnection(frames: connection.frames, send: { frame in
                let held = state.withLockedValue { state -> Bool in
                    guard state.holding, frame.contains("\"type\":\"mutate\"") else { return false }
                    state.held.append((send, frame))
                    return true
                }
                if !held { send(frame) }
            }, close: connection.close)
        }
    }

    static let mutations = [
        PublishedMutation(name: "add", parameters: [QueryParameter("id", type: .integer), QueryParameter("day", type: .integer),
                                                    QueryParameter("sender", type: .text), QueryParameter("subject", type: .text),
                                                    QueryParameter("folder", type: .text, default: .text("inbox"))],
                          statements: [.init("INSERT INTO message (id, day, sender, subject, folder) VALUES (:id, :day, :sender, :subject, :folder)")]),
        PublishedMutation(name: "archive", parameters: [QueryParameter("id", type: .integer)],
                          statements: [.init("UPDATE message SET folder = 'archive' WHERE id = :id AND folder = 'inbox'")]),
        PublishedMutation(name: "restore", parameters: [QueryParameter("id", type: .integer)],
                          statements: [.init("UPDATE message SET folder = 'inbox' WHERE message.id = :id AND folder = 'archive'")]),
        PublishedMutation(name: "edit", parameters: [QueryParameter("id", type: .integer), QueryParameter("day", type: .integer),
                                                     QueryParameter("subject", type: .text)],
                          statements: [.init("UPDATE message SET subject = :subject, day = :day WHERE id = :id")]),
        PublishedMutation(name: "rename", parameters: [QueryParameter("id", type: .integer), QueryParameter("sender", type: .text),
                                                       QueryParameter("after", type: .integer)],
                          statements: [.init("UPDATE message SET sender = :sender WHERE :after <= day AND id = :id")]),
        PublishedMutation(name: "remove", parameters: [QueryParameter("id", type: .integer)],
                          statements: [.init("DELETE FROM message WHERE id = :id")]),
        // Two statements: the second sees the row the first inserted.
        PublishedMutation(name: "draft", parameters: [QueryParameter("id", type: .integer), QueryParameter("day", type: .integer),
                                                      QueryParameter("subject", type: .text)],
                          statements: [.init("INSERT INTO message (id, day, sender, subject, folder) VALUES (:id, :day, 'me', 'draft', 'inbox')"),
                                       .init("UPDATE message SET subject = :subject WHERE id = :id AND sender = 'me'")]),
        // Not stated: the new day is an expression.
        PublishedMutation(name: "later", parameters: [QueryParameter("id", type: .integer)],
                          statements: [.init("UPDATE message SET day = day + 1 WHERE id = :id")]),
    ]

    /// The rows a list shows, with their values and whether they are pending.
    static func shown(_ list: RemoteLiveQuery) -> [RemoteRecord?] {
        let state = list.displayedState
        return (0..<state.count).map { list.records.record(for: state.row(at: $0)) }
    }

    static func rows(_ records: [RemoteRecord?]) -> [[WireValue]]? {
        var rows: [[WireValue]] = []
        for record in records {
            guard let record else { return nil }
            rows.append(record.values)
        }
        return rows
    }

    static func randomCall(_ random: inout SeededRandomNumberGenerator, ids: [Int64], nextID: inout Int64,
                           text: (inout SeededRandomNumberGenerator) -> String) -> (String, [String: WireValue]) {
        let id = WireValue.integer(ids.isEmpty || random.next(upTo: 8) == 0 ? 5_000 : ids[random.next(upTo: ids.count)])
        switch random.next(upTo: 9) {
        case 0, 1:
            // Now and then an identity the table has: the database refuses it.
            nextID += random.next(upTo: 6) == 0 ? 0 : 1
            var arguments: [String: WireValue] = ["id": .integer(nextID), "day": .integer(Int64(random.next(upTo: 8))),
                                                  "sender": .text(text(&random)), "subject": .text(text(&random))]
            if random.next(upTo: 3) == 0 { arguments["folder"] = .text("archive") }
            return ("add", arguments)
        case 2: return ("archive", ["id": id])
        case 3: return ("restore", ["id": id])
        case 4: return ("edit", ["id": id, "day": .integer(Int64(random.next(upTo: 8))), "subject": .text(text(&random))])
        case 5: return ("rename", ["id": id, "sender": .text(text(&random)), "after": .integer(Int64(random.next(upTo: 8)))])
        case 6: return ("remove", ["id": id])
        case 7:
            nextID += 1
            return ("draft", ["id": .integer(nextID), "day": .integer(Int64(random.next(upTo: 8))), "subject": .text(text(&random))])
        default: return ("later", ["id": id])
        }
    }

    /// What the oracle reads from the database: a folder's list as the query orders it, and the
    /// identities the table has.
    struct Database {
        var select: (_ folder: String) async throws -> [[WireValue]]
        var ids: () async throws -> [Int64]
    }

    @Test("random mutations without an app's effect: each list shows, before the answer, the list the commit produces (or the list before, where it cannot place the row); the commit lands with no move, insert or delete")
    func oracle() async throws {
        let seed = SeededRandomNumberGenerator.testSeed("derived effects")
        let (fixture, database) = try await Self.sqliteServer(seed: seed)
        try await Self.run(url: fixture.url, database: database, seed: seed, text: { WireFixture.text(&$0) })
        await fixture.stop()
    }

    /// A server over a fresh SQLite file of 30 random messages, publishing the inbox and ``mutations``.
    static func sqliteServer(seed: UInt64) async throws -> (WireFixture, Database) {
        let fixture = try await WireFixture.start(rows: 30, seed: seed, mutations: Self.mutations)
        let database = Database(select: { folder in try fixture.select(folder: folder).rows.map { Self.wireRow($0) } },
                                ids: { try await fixture.pool.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM message") } })
        return (fixture, database)
    }

    static let postgresSchema = """
        CREATE TABLE message (id bigint PRIMARY KEY, day bigint, sender text COLLATE "C", subject text COLLATE "C",
                              folder text COLLATE "C" NOT NULL DEFAULT 'inbox');
        INSERT INTO message SELECT g, g % 8, 's' || (g % 5), 'm' || g, CASE WHEN g % 3 = 0 THEN 'archive' ELSE 'inbox' END
            FROM generate_series(1, 30) g
        """

    /// The same mutations as a `serve --config` file states them.
    static var postgresConfiguration: String {
        var lines = ["queries:", "  - name: inbox", "    sql: \(WireFixture.inboxSQL)", "    section: day", "    parameters:",
                     "      - { name: folder, type: text, default: inbox }", "mutations:"]
        for mutation in mutations {
            lines.append("  - name: \(mutation.name)")
            lines.append("    parameters:")
            for parameter in mutation.parameters {
                let fallback = if case let .text(text)? = parameter.defaultValue { ", default: \(text)" } else { "" }
                lines.append("      - { name: \(parameter.name), type: \(parameter.type)\(fallback) }")
            }
            lines.append("    statements:")
            if case let .statements(statements) = mutation.definition {
                for statement in statements { lines.append("      - sql: \"\(statement.sql)\"") }
            }
        }
        return lines.joined(separator: "\n")
    }

    @Test("the same over PostgreSQL: each list shows, before the answer, the list the commit produces or the list before",
          .enabled(if: PostgresCluster.isPresent, "PostgreSQL's server binaries are not installed"))
    func postgresOracle() async throws {
        try await Self.withPostgresServer { url, database in
            let seed = SeededRandomNumberGenerator.testSeed("derived effects over PostgreSQL")
            // PostgreSQL's text holds no NUL: one in twenty texts keeps it, and its mutation is refused.
            try await Self.run(url: url, database: database, seed: seed, text: { random in
                let text = WireFixture.text(&random)
                return random.next(upTo: 20) == 0 ? text : text.replacingOccurrences(of: "\0", with: "")
            })
        }
    }

    /// Runs `body` with a `livelist serve --postgres` process over a fresh database of
    /// ``postgresSchema``, publishing ``postgresConfiguration``: its URL, and the database read.
    /// Returns without calling it when the cluster does not start (and is not required).
    static func withPostgresServer(_ body: @MainActor (_ url: String, _ database: Database) async throws -> Void) async throws {
        guard let cluster = try await PostgresCluster.running() else { return }
        try await PostgresCluster.exclusively {
            let (configuration, writer) = try await PostgresCluster.database(cluster)
            do {
                for statement in Self.postgresSchema.components(separatedBy: ";\n") {
                    try await writer.query(PostgresQuery(unsafeSQL: statement), logger: PostgresCluster.logger)
                }
                let file = NSTemporaryDirectory() + "livelist-derived-\(UUID().uuidString).yaml"
                try Data(Self.postgresConfiguration.utf8).write(to: URL(fileURLWithPath: file))
                let server = try await ServeProcess.start(["--postgres", PostgresCluster.url(cluster, database: configuration.database ?? ""), "--config", file])
                defer { server.kill() }
                let database = Database(select: { folder in
                    var rows: [[WireValue]] = []
                    let sql = WireFixture.inboxSQL.replacingOccurrences(of: ":folder", with: "'\(folder)'")
                    for try await (id, day, sender, subject) in try await writer.query(PostgresQuery(unsafeSQL: sql), logger: PostgresCluster.logger)
                        .decode((Int64, Int64?, String?, String?).self) {
                        rows.append([.integer(id), day.map(WireValue.integer) ?? .null, sender.map(WireValue.text) ?? .null, subject.map(WireValue.text) ?? .null])
                    }
                    return rows
                }, ids: {
                    var ids: [Int64] = []
                    for try await id in try await writer.query("SELECT id FROM message", logger: PostgresCluster.logger).decode(Int64.self) { ids.append(id) }
                    return ids
                })
                try await body(server.url, database)
            } catch {
                try? await writer.close()
                throw error
            }
            try await writer.close()
        }
    }

    /// Sends 60 random mutations without an effect of the app's, each held on the wire while both
    /// lists (inbox and archive) show what they derive, and checks them against the database.
    static func run(url: String, database: Database, seed: UInt64, text: @escaping (inout SeededRandomNumberGenerator) -> String) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let transport = HoldingTransport()
        let session = RemoteSession(url: url, transport: transport)
        let folders = ["inbox", "archive"]
        let lists = folders.map { RemoteLiveQuery(session: session, query: "inbox", arguments: ["folder": .text($0)], window: 0..<200) }
        let mutator = RemoteMutator(session: session, client: "derived-oracle")
        var structural = [0, 0]
        var log = ["", ""]
        var reloads = [0, 0]
        for (index, list) in lists.enumerated() {
            list.onEvent = { event in
                if case let .changes(changeset, _) = event {
                    let changes = changeset.changes
                    log[index] += "\(changes) "
                    structural[index] += changes.itemInserts.count + changes.itemDeletes.count + changes.itemMoves.count
                        + changes.sectionInserts.count + changes.sectionDeletes.count + changes.sectionMoves.count
                    reloads[index] += changes.itemReloads.count
                }
            }
            list.start()
        }
        mutator.start()
        defer {
            mutator.stop()
            for list in lists { list.stop() }
        }
        func matchesSelect() async throws -> Bool {
            for (list, folder) in zip(lists, folders) where Self.rows(Self.shown(list)) != (try await database.select(folder)) { return false }
            return true
        }
        try await eventuallyAsync("first states") { try await matchesSelect() && lists.allSatisfy { $0.model.effects != nil } }
        #expect(lists[0].model.effects?.mutations.keys.sorted() == ["add", "archive", "draft", "edit", "later", "remove", "rename", "restore"])

        var nextID: Int64 = 10_000
        var (shownCount, changedCount, notShown, refused, pendingRows) = (0, 0, 0, 0, 0)
        for step in 0..<60 {
            let ids = try await database.ids()
            let (name, arguments) = Self.randomCall(&random, ids: ids, nextID: &nextID, text: text)
            let before = lists.map { Self.shown($0) }
            transport.hold()
            let call = Task { @MainActor in try await mutator.mutate(name, arguments: arguments) }
            try await eventually("mutation \(step) sent") { transport.heldCount == 1 }
            let pending = lists.map { Self.shown($0) }
            let structuralBefore = structural
            let reloadsBefore = reloads
            log = ["", ""]
            transport.release()
            var failed = false
            do {
                _ = try await within("mutation \(step) answered") { _ = try await call.value }
            } catch RemoteListError.server {
                failed = true
                refused += 1
            }
            try await eventuallyAsync("lists after \(step)") { try await matchesSelect() && lists.allSatisfy { $0.pendingChangesCount == 0 } }
            for index in lists.indices {
                let (was, expected, now) = (Self.rows(before[index]), Self.rows(pending[index]), Self.rows(Self.shown(lists[index])))
                #expect(expected != nil, "step \(step) \(name) \(arguments): \(folders[index]) shows a placeholder while pending")
                // A refused mutation's pending rows went with its error: the list is the SELECT again (above).
                if failed { continue }
                guard was != now else {
                    #expect(expected == was, "step \(step) \(name) \(arguments): \(folders[index]) unchanged by the commit, yet showed a change")
                    continue
                }
                changedCount += 1
                if expected == now {
                    shownCount += 1
                    #expect(structural[index] == structuralBefore[index],
                            "step \(step) \(name): \(folders[index]) moved, inserted or deleted rows when the commit landed: \(log[index])")
                    // A pending row becomes the server's in place: a reload of it (its cell shows it confirmed), nothing else.
                    let marked = pending[index].compactMap { $0 }.filter(\.isPending).count
                    #expect(reloads[index] - reloadsBefore[index] <= marked, "step \(step) \(name): \(folders[index]) reloaded more than its pending rows: \(log[index])")
                    pendingRows += marked
                } else {
                    #expect(expected == was, """
                        step \(step) \(name) \(arguments): \(folders[index]) showed neither the committed list nor the one before
                        pending: \(expected ?? [])
                        now:     \(now ?? [])
                        """)
                    notShown += 1
                }
            }
        }
        print("derived effects: shown \(shownCount) of \(changedCount) changed lists, not shown \(notShown), refused \(refused), pending rows \(pendingRows)")
        // The derivation must show most changes: otherwise the test proves nothing.
        #expect(changedCount > 20 && shownCount * 3 >= changedCount * 2 && pendingRows > 10,
                "shown \(shownCount) of \(changedCount) changed lists (not shown \(notShown), refused \(refused), pending rows \(pendingRows))")
    }

    // MARK: The web client

    @Test("the web client (livelist.js in node) over SQLite: random mutations without an app's effect; each list shows, before the answer, the list the commit produces or the list before, and takes the commit with no move, insert or delete",
          .enabled(if: JSClient.node != nil, "node is not installed"))
    func webOracle() async throws {
        let seed = SeededRandomNumberGenerator.testSeed("derived effects, web client")
        let (fixture, database) = try await Self.sqliteServer(seed: seed)
        try await Self.runWeb(url: fixture.url, database: database, seed: seed)
        await fixture.stop()
    }

    @Test("the web client over PostgreSQL: each list shows, before the answer, the list the commit produces or the list before",
          .enabled(if: JSClient.node != nil, "node is not installed"),
          .enabled(if: PostgresCluster.isPresent, "PostgreSQL's server binaries are not installed"))
    func webPostgresOracle() async throws {
        try await Self.withPostgresServer { url, database in
            let seed = SeededRandomNumberGenerator.testSeed("derived effects over PostgreSQL, web client")
            // PostgreSQL's text holds no NUL: the script keeps it in one text in twenty (refused).
            try await Self.runWeb(url: url, database: database, seed: seed, flags: ["--no-nul"])
        }
    }

    /// Runs `Tests/Web/derived-oracle-client.mjs` (livelist.js's `Connection`, two `LiveQuery`s
    /// and a `Mutator`) against the server at `url`: `count` random mutations of ``mutations``
    /// without an app's effect, each list read before the call, right after it (the derived
    /// effects shown) and once it holds the commit. Expects no violation — a pending list neither
    /// the list before nor the committed one, or a list that showed the committed one taking it
    /// with a move, an insert or a delete — enough lists shown, and the lists at the end equal to
    /// the SELECT.
    static func runWeb(url: String, database: Database, seed: UInt64, count: Int = 300, flags: [String] = []) async throws {
        let report = try await runNode(script: "Tests/Web/derived-oracle-client.mjs", arguments: [url, "\(seed)", "\(count)"] + flags, seconds: 90)
        func number(_ key: String, in object: JSONValue? = report) -> Int {
            guard case let .integer(value)? = object?[key] else { return -1 }
            return Int(value)
        }
        let (changed, shown, notShown, violations) = (number("changed"), number("shown"), number("notShown"), number("violations"))
        let (refused, pendingRows) = (number("refused"), number("pendingRows"))
        let perList = ["inbox", "archive"].map { folder in
            "\(folder) \(number("shown", in: report["lists"]?[folder]))/\(number("changed", in: report["lists"]?[folder]))"
        }
        print("derived effects, web client: shown \(shown) of \(changed) changed lists (\(perList.joined(separator: ", "))), not shown \(notShown), refused \(refused) of \(count) (\(number("refusedShown")) lists showed one\(report["refusedShownCalls"].flatMap { $0 == .array([]) ? nil : ": \($0.serialized)" } ?? "")), pending rows \(pendingRows)")
        #expect(report["stated"] == .array(["add", "archive", "draft", "edit", "later", "remove", "rename", "restore"]), "\(report["stated"]?.serialized ?? "")")
        #expect(violations == 0, "\(violations) violations, the first: \(report["firstViolations"]?.serialized ?? "")")
        #expect(number("unknownRows") == 0, "a list showed a row it does not know while a mutation was pending")
        // The derivation must show most changes: otherwise the test proves nothing.
        #expect(changed > 20 && shown * 3 >= changed * 2 && pendingRows > 10,
                "shown \(shown) of \(changed) changed lists (not shown \(notShown), refused \(refused), pending rows \(pendingRows))")
        for folder in ["inbox", "archive"] {
            // Compared as JSON: text code point for code point (a Swift String compares canonically).
            let selected = JSONValue.array(try await database.select(folder).map { .array($0.map(\.json)) })
            let matches = report["final"]?[folder] == selected
            #expect(matches, """
                the web client's \(folder) at the end is not the SELECT
                shown:    \(report["final"]?[folder]?.serialized ?? "none")
                selected: \(selected.serialized)
                """)
        }
    }

    /// Runs `script` (a path from the package's root) in node with `arguments`, for at most
    /// `seconds`, and reads the last line it prints: a JSON object without `error`. Its output goes
    /// to a file, which never fills as a pipe would.
    static func runNode(script: String, arguments: [String], seconds: Double) async throws -> JSONValue {
        let node = try #require(JSClient.node)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let output = NSTemporaryDirectory() + "livelist-node-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: output + ".out", contents: nil)
        _ = FileManager.default.createFile(atPath: output + ".err", contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: output + ".out")
            try? FileManager.default.removeItem(atPath: output + ".err")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: node)
        process.arguments = ["--experimental-websocket", "--no-warnings", root.appendingPathComponent(script).path] + arguments
        process.standardOutput = FileHandle(forWritingAtPath: output + ".out")
        process.standardError = FileHandle(forWritingAtPath: output + ".err")
        try process.run()
        let deadline = ContinuousClock.now + .seconds(seconds)
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                process.terminate()
                throw TimeLimitExceeded(what: "node \(script)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let printed = (try? String(contentsOfFile: output + ".out", encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? ""
        let line = printed.split(separator: "\n").last.map(String.init) ?? ""
        guard process.terminationStatus == 0, let report = try? JSONParser.parse(Array(line.utf8)), case .object = report, report["error"] == nil else {
            throw JSClient.NodeFailed(status: process.terminationStatus, output: line + (errors.isEmpty ? "" : "\n" + errors))
        }
        return report
    }

    /// A fixture row (text as bytes) as the client holds it.
    static func wireRow(_ row: [WireValue]) -> [WireValue] {
        row.map { value in
            if case let .blob(bytes) = value { return .text(String(decoding: bytes, as: UTF8.self)) }
            return value
        }
    }
}
