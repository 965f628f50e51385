import DroppingTransport
import Foundation
import ListTesting
import LiveListClient
import LiveListWire
import PostgresNIO
import ScratchPostgres
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Connects to the next of `urls` on every connection: a client behind a load balancer, moved to
/// the other instance whenever its connection is lost.
final class AlternatingTransport: RemoteTransport, @unchecked Sendable {
    // `@unchecked Sendable`: `next` is only touched under `lock`.
    private let lock = NSLock()
    private var next = 0
    private let urls: [String]
    private let base = WebSocketTransport()

    init(_ urls: [String]) { self.urls = urls }

    func connect(to url: String) async throws -> RemoteConnection {
        let target = lock.withLock {
            defer { next += 1 }
            return urls[next % urls.count]
        }
        return try await base.connect(to: target)
    }
}

/// The mutation oracle over PostgreSQL: two `serve --postgres` instances over one database, three
/// clients whose every reconnection goes to the other instance, connections cut at random, an
/// instance killed and started again — each mutation applied once, in each client's order, as
/// the serial application says; no pending row shown twice; every list equal to the SELECT.
@Suite("Mutations against an oracle over PostgreSQL", .serialized, .timeLimit(.minutes(5)),
       .enabled(if: PostgresCluster.isPresent, "PostgreSQL's server binaries are not installed"))
struct MutationOraclePostgresTests {
    static let schema = """
        CREATE TABLE message (id bigint PRIMARY KEY, day bigint NOT NULL, sender text COLLATE "C" NOT NULL, subject text NOT NULL, folder text NOT NULL);
        INSERT INTO message SELECT g, g % 8, 's' || (g % 5), 'm' || g, 'inbox' FROM generate_series(1, 40) g;
        CREATE TABLE tally (client text PRIMARY KEY, value bigint NOT NULL);
        CREATE TABLE step_log (id bigserial PRIMARY KEY, client text NOT NULL, k bigint NOT NULL)
        """

    static let inboxSQL = "SELECT id, day, sender, subject FROM message WHERE folder = :folder ORDER BY day DESC, sender, id"

    static let configuration = """
        queries:
          - name: inbox
            sql: \(inboxSQL)
            section: day
            parameters:
              - { name: folder, type: text, default: inbox }
        mutations:
          - name: step
            parameters:
              - { name: client, type: text }
              - { name: k, type: integer }
            statements:
              - sql: INSERT INTO tally (client, value) VALUES (:client, 0) ON CONFLICT (client) DO NOTHING
              - sql: UPDATE tally SET value = (value * 31 + :k) % 1000000007 WHERE client = :client
              - sql: INSERT INTO step_log (client, k) VALUES (:client, :k)
          - name: note
            parameters:
              - { name: id, type: integer }
              - { name: client, type: text }
              - { name: k, type: integer }
              - { name: subject, type: text }
            statements:
              - sql: INSERT INTO message (id, day, sender, subject, folder) VALUES (:id, :k, :client, :subject, 'inbox')
          - name: archive
            parameters:
              - { name: client, type: text }
              - { name: k, type: integer }
            statements:
              - sql: UPDATE message SET folder = 'archive' WHERE sender = :client AND day = :k AND folder = 'inbox'
                mustChangeRows: true
        """

    static func select(_ connection: PostgresConnection) async throws -> (sections: [WireSection], rows: [[WireValue]]) {
        var rows: [[WireValue]] = []
        var sections: [WireSection] = []
        let sql = inboxSQL.replacingOccurrences(of: ":folder", with: "'inbox'")
        for try await (id, day, sender, subject) in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: PostgresCluster.logger)
            .decode((Int64, Int64, String, String).self) {
            rows.append([.integer(id), .integer(day), .text(sender), .text(subject)])
            if sections.last?.key == .integer(day) { sections[sections.count - 1].count += 1 } else { sections.append(WireSection(key: .integer(day), count: 1)) }
        }
        return (sections, rows)
    }

    @Test("pipelined mutations of three clients with pending rows, moved between two instances at every reconnection, through cut connections and a killed instance: each applied once, in order, as the serial oracle says; no row shown twice")
    @MainActor
    func oracle() async throws {
        guard let cluster = try await PostgresCluster.running() else { return }
        try await PostgresCluster.exclusively {
            let (configuration, writer) = try await PostgresCluster.database(cluster)
            do {
                try await Self.run(cluster, configuration, writer)
            } catch {
                try? await writer.close()
                throw error
            }
            try await writer.close()
        }
    }

    @MainActor
    static func run(_ cluster: PostgresCluster.Running, _ configuration: PostgresConnection.Configuration, _ writer: PostgresConnection) async throws {
        for statement in schema.components(separatedBy: ";\n") { try await writer.query(PostgresQuery(unsafeSQL: statement), logger: PostgresCluster.logger) }
        let file = NSTemporaryDirectory() + "livelist-pg-oracle-\(UUID().uuidString).yaml"
        try Data(Self.configuration.utf8).write(to: URL(fileURLWithPath: file))
        let databaseName = configuration.database ?? ""
        let common = ["--postgres", PostgresCluster.url(cluster, database: databaseName), "--config", file]
        let a = try await ServeProcess.start(common + ["--slot", "livelist_oa_\(databaseName)"])
        let b = try await ServeProcess.start(common + ["--slot", "livelist_ob_\(databaseName)"])
        defer {
            a.kill()
            b.kill()
        }
        let seed = SeededRandomNumberGenerator.testSeed("PostgreSQL mutation oracle")
        var random = SeededRandomNumberGenerator(seed: seed)
        let transport = DroppingTransport(base: AlternatingTransport([a.url, b.url]))
        let names = ["c0", "c1", "ü\u{308}-c2"]
        let mutators = names.map { RemoteMutator(url: a.url, client: $0, transport: transport) }
        let lists = names.map { _ in PendingChangesTests.Watched(url: a.url, window: 0..<60, viewportRows: 10, transport: transport) }
        // PostgreSQL's text holds no NUL: the notes' subjects go without.
        let operations = names.indices.map { client in
            MutationOracleTests.randomOperations(24, client: client, &random).map { operation -> MutationOracleTests.Operation in
                guard case let .note(id, k, subject) = operation else { return operation }
                return .note(id, k, subject.replacingOccurrences(of: "\0", with: "␀"))
            }
        }

        var tasks: [[Task<MutationOracleTests.Outcome, any Error>]] = names.map { _ in [] }
        var drops = 0
        for round in 0..<6 {
            for (client, mutator) in mutators.enumerated() {
                for index in (round * 4)..<(round * 4 + 4) {
                    tasks[client].append(MutationOracleTests.send(operations[client], index, client: names[client], by: mutator,
                                                                  showingIn: lists[client].remote))
                }
            }
            try await Task.sleep(for: .milliseconds(Int(20 + random.next(upTo: 60))))
            if random.next(upTo: 2) == 0 || round == 1 || round == 4 { drops += transport.drop() }
            if round == 3 {
                // An instance dies with mutations in flight, and starts again.
                b.kill()
                try await Task.sleep(for: .milliseconds(100))
                guard try await b.launch() else { throw TimeLimitExceeded(what: "instance b starting again") }
            }
        }
        var outcomes: [[MutationOracleTests.Outcome]] = []
        for clientTasks in tasks {
            var answered: [MutationOracleTests.Outcome] = []
            for task in clientTasks { answered.append(try await task.value) }
            outcomes.append(answered)
        }
        print("PostgreSQL mutation oracle seed \(seed): \(drops) connections cut, an instance killed, \(outcomes.joined().filter(\.duplicate).count) answered as sent again")
        #expect(drops > 0)
        for (client, name) in names.enumerated() {
            let ids = outcomes[client].map(\.id)
            #expect(ids.sorted() == Array(1...24), "seed \(seed), \(name): numbers \(ids)")
            var serial = MutationOracleTests.Serial()
            for (operation, outcome) in zip(operations[client], outcomes[client]).sorted(by: { $0.1.id < $1.1.id }) {
                serial.apply(operation, id: outcome.id)
            }
            let refused = Set(outcomes[client].filter(\.refused).map(\.id))
            #expect(refused == serial.refusals, "seed \(seed), \(name): refusals \(refused.sorted()) vs \(serial.refusals.sorted())")
            let quoted = name.replacingOccurrences(of: "'", with: "''")
            var tally: Int64?
            for try await value in try await writer.query(PostgresQuery(unsafeSQL: "SELECT value FROM tally WHERE client = '\(quoted)'"), logger: PostgresCluster.logger)
                .decode(Int64.self) { tally = value }
            var steps: [Int64] = []
            for try await k in try await writer.query(PostgresQuery(unsafeSQL: "SELECT k FROM step_log WHERE client = '\(quoted)' ORDER BY id"), logger: PostgresCluster.logger)
                .decode(Int64.self) { steps.append(k) }
            var notes: [(day: Int64, archived: Bool)] = []
            for try await (day, folder) in try await writer.query(PostgresQuery(unsafeSQL: "SELECT day, folder FROM message WHERE sender = '\(quoted)' ORDER BY id"),
                                                                  logger: PostgresCluster.logger).decode((Int64, String).self) {
                notes.append((day, folder == "archive"))
            }
            #expect(tally == serial.tally, "seed \(seed), \(name): tally")
            #expect(steps == serial.steps, "seed \(seed), \(name): steps applied once each, in order")
            #expect(notes.map(\.day) == serial.notes.map(\.day), "seed \(seed), \(name): one note per note call, in order")
            #expect(notes.map(\.archived) == serial.notes.map(\.archived), "seed \(seed), \(name): archived")
        }
        let oracle = try await Self.select(writer)
        try await eventually("every list equals the SELECT", seconds: 30) { lists.allSatisfy { $0.client.matches(oracle) } }
        for list in lists {
            #expect(list.remote.pendingChangesCount == 0)
            #expect(list.shownTwice.isEmpty, "seed \(seed): \(list.shownTwice)")
            #expect(list.deletedAndInserted.isEmpty, "seed \(seed): \(list.deletedAndInserted)")
        }
        print("PostgreSQL mutation oracle seed \(seed): pending rows shown \(lists.map(\.pendingRowsShown))")
        for mutator in mutators { mutator.stop() }
        for list in lists { list.remote.stop() }
    }
}
