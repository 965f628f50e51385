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

/// Pending rows the server derives (a reset's `effects`), end to end over SQLite: random
/// mutations the app describes no effect for, each held back on its way to the server while the
/// lists show what they expect; the expected lists must equal the lists the commit produces (or,
/// where an effect cannot be shown, the lists before), and the commit must land without a move,
/// an insert or a delete on a list that showed it.
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
        let fixture = try await WireFixture.start(rows: 30, seed: seed, mutations: Self.mutations)
        let database = Database(select: { folder in try fixture.select(folder: folder).rows.map { Self.wireRow($0) } },
                                ids: { try await fixture.pool.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM message") } })
        try await Self.run(url: fixture.url, database: database, seed: seed, text: { WireFixture.text(&$0) })
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
                let seed = SeededRandomNumberGenerator.testSeed("derived effects over PostgreSQL")
                // PostgreSQL's text holds no NUL: one in twenty texts keeps it, and its mutation is refused.
                try await Self.run(url: server.url, database: database, seed: seed, text: { random in
                    let text = WireFixture.text(&random)
                    return random.next(upTo: 20) == 0 ? text : text.replacingOccurrences(of: "\0", with: "")
                })
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

    /// A fixture row (text as bytes) as the client holds it.
    static func wireRow(_ row: [WireValue]) -> [WireValue] {
        row.map { value in
            if case let .blob(bytes) = value { return .text(String(decoding: bytes, as: UTF8.self)) }
            return value
        }
    }
}
