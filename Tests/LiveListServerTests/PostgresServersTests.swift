import Foundation
import ListTesting
import LiveListClient
import LiveListWire
import Logging
import OwnThread
import PostgresNIO
import ScratchPostgres
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A `livelist serve --postgres` process on a port below the ephemeral range (so that a restart
/// binds it again), with its output in a file.
final class ServeProcess: @unchecked Sendable {
    // `@unchecked Sendable`: `pid` is only read and written by the test that owns the process.
    let arguments: [String]
    let port: Int
    let output: String
    private(set) var pid: pid_t = 0

    /// The `livelist` binary that `swift test` built next to the test bundle.
    static var executable: String {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("livelist").path), directory.pathComponents.count > 1 {
            directory = directory.deletingLastPathComponent()
        }
        return directory.appendingPathComponent("livelist").path
    }

    /// Starts `livelist serve` with `arguments` on a free port below the ephemeral range, on
    /// `host`, through `prefix` (`ip netns exec NAME`: on a test host of its own).
    static func start(_ arguments: [String], host: String = "127.0.0.1", prefix: [String] = []) async throws -> ServeProcess {
        for _ in 0..<20 {
            let process = ServeProcess(arguments: arguments, port: Int.random(in: 20_000..<32_000), host: host, prefix: prefix)
            if try await process.launch() { return process }
            process.kill()
        }
        throw TimeLimitExceeded(what: "a livelist serve process listening on a free port")
    }

    let host: String
    private let prefix: [String]

    private init(arguments: [String], port: Int, host: String, prefix: [String]) {
        self.arguments = arguments
        self.port = port
        self.host = host
        self.prefix = prefix
        output = NSTemporaryDirectory() + "livelist-serve-\(UUID().uuidString).log"
    }

    var url: String { "ws://\(host):\(port)/live" }

    /// Starts the process on its port; `true` once it listens, `false` if it exited first.
    func launch() async throws -> Bool {
        let address = host == "127.0.0.1" ? [] : ["--host", host]
        pid = try PostgresCluster.spawn(prefix + [Self.executable, "serve"] + arguments + address + ["--port", "\(port)"], outputPath: output)
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if log.contains(url) { return true }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TimeLimitExceeded(what: "livelist serve on port \(port): \(log)")
    }

    var log: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }

    /// The status of its `GET /live/health/ready`, or 0 when it did not answer within 5 s.
    func readiness() async -> Int {
        guard let url = URL(string: "http://\(host):\(port)/live/health/ready") else { return 0 }
        var request = URLRequest(url: url)
        request.timeoutInterval = 5
        guard let (_, response) = try? await URLSession.shared.data(for: request) else { return 0 }
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    /// SIGKILL, as a crash: no graceful shutdown, sockets cut by the kernel.
    func kill() {
        guard pid > 0 else { return }
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        pid = 0
    }

    /// SIGTERM: a graceful shutdown, waited for on a thread of its own (it takes the drain
    /// time); its exit status.
    func terminate() async -> Int32 {
        guard pid > 0 else { return -1 }
        let pid = pid
        self.pid = 0
        Glibc.kill(pid, SIGTERM)
        return await onOwnThread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            return (status >> 8) & 0xFF
        }
    }
}

/// Connects wherever the test routes it now, whatever URL the client asks for: clients behind a
/// load balancer that sends them to another server when theirs goes away.
final class RoutedTransport: RemoteTransport, @unchecked Sendable {
    // `@unchecked Sendable`: `target` is only touched under `lock`.
    private let lock = NSLock()
    private var target: String
    private let base = WebSocketTransport()

    init(_ target: String) { self.target = target }

    func route(to url: String) { lock.withLock { target = url } }

    func connect(to url: String) async throws -> RemoteConnection {
        try await base.connect(to: lock.withLock { target })
    }
}

@Suite("Several servers over one PostgreSQL database", .serialized, .timeLimit(.minutes(5)), .enabled(if: PostgresCluster.isPresent, "PostgreSQL's server binaries are not installed"))
struct PostgresServersTests {
    static let schema = """
        CREATE TABLE contact (id bigint PRIMARY KEY, name text COLLATE "C" NOT NULL);
        CREATE TABLE message (id bigserial PRIMARY KEY, day bigint NOT NULL, contact_id bigint NOT NULL, subject text NOT NULL, folder text NOT NULL);
        CREATE INDEX ON message (contact_id);
        INSERT INTO contact SELECT g, 'c' || g FROM generate_series(1, 12) g;
        INSERT INTO message (day, contact_id, subject, folder)
        SELECT g % 8, 1 + g % 12, 's' || g, CASE WHEN g % 10 < 7 THEN 'inbox' ELSE 'archive' END FROM generate_series(1, 300) g
        """

    static let inboxSQL = """
        SELECT m.id, m.day, c.name AS sender, m.subject FROM message m JOIN contact c ON c.id = m.contact_id
        WHERE m.folder = :folder ORDER BY m.day DESC, sender, m.id
        """

    static let configuration = """
        queries:
          - name: inbox
            sql: \(inboxSQL.replacingOccurrences(of: "\n", with: " "))
            section: m.day
            parameters:
              - { name: folder, type: text, default: inbox }
        """

    /// The query's answer now, read independently of LiveList: sections (day, count) and rows.
    static func select(_ connection: PostgresConnection) async throws -> (sections: [WireSection], rows: [[WireValue]]) {
        let sql = inboxSQL.replacingOccurrences(of: ":folder", with: "'inbox'")
        var rows: [[WireValue]] = []
        var sections: [WireSection] = []
        for try await (id, day, sender, subject) in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: PostgresCluster.logger)
            .decode((Int64, Int64, String, String).self) {
            rows.append([.integer(id), .integer(day), .text(sender), .text(subject)])
            if sections.last?.key == .integer(day) { sections[sections.count - 1].count += 1 } else { sections.append(WireSection(key: .integer(day), count: 1)) }
        }
        return (sections, rows)
    }

    static func strings(_ connection: PostgresConnection, _ sql: String) async throws -> [String] {
        var values: [String] = []
        for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: PostgresCluster.logger).decode(String.self) {
            values.append(value)
        }
        return values
    }

    static let names = ["Zoë", "Zoe\u{308}", "a", "A", "😀", "ß", "E\u{301}", "É", "x y", "Ω"]

    /// One random transaction: messages and contacts inserted, renamed, moved, deleted.
    static func randomStatements(_ random: inout SeededRandomNumberGenerator) -> [String] {
        (0..<random.next(upTo: 3) + 1).map { _ in
            let id = random.next(upTo: 320) + 1
            let name = names[random.next(upTo: names.count)].replacingOccurrences(of: "'", with: "''")
            switch random.next(upTo: 7) {
            case 0: return "INSERT INTO message (day, contact_id, subject, folder) VALUES (\(random.next(upTo: 8)), \(random.next(upTo: 12) + 1), '\(name)', 'inbox')"
            case 1: return "UPDATE message SET day = \(random.next(upTo: 8)) WHERE id = \(id)"
            case 2: return "UPDATE message SET folder = CASE folder WHEN 'inbox' THEN 'archive' ELSE 'inbox' END WHERE id = \(id)"
            case 3: return "UPDATE contact SET name = '\(name)\(id % 3)' WHERE id = \(id % 12 + 1)"
            case 4: return "UPDATE message SET contact_id = \(random.next(upTo: 12) + 1), subject = '\(name)' WHERE id = \(id)"
            case 5: return "DELETE FROM message WHERE id = \(id)"
            default: return "UPDATE message SET subject = subject || '\(name)' WHERE id % 9 = \(id % 9)"
            }
        }
    }

    @Test("Two serve instances over one database: clients on both equal the SELECT at one common version, through writes from psql and the app, an instance killed and restarted, a client moved to the other instance, and a PostgreSQL restart")
    @MainActor
    func twoInstances() async throws {
        guard let cluster = try await PostgresCluster.running() else { return }
        try await PostgresCluster.exclusively {
            let (configuration, writer) = try await PostgresCluster.database(cluster)
            do {
                try await Self.twoInstances(cluster, configuration, writer)
            } catch {
                // A connection must be closed before it goes (postgres-nio checks).
                try? await writer.close()
                throw error
            }
        }
    }

    @MainActor
    static func twoInstances(_ cluster: PostgresCluster.Running, _ configuration: PostgresConnection.Configuration, _ writer: PostgresConnection) async throws {
        do {
            let databaseName = configuration.database ?? ""
            for statement in Self.schema.components(separatedBy: ";\n") { try await writer.query(PostgresQuery(unsafeSQL: statement), logger: PostgresCluster.logger) }
            let file = NSTemporaryDirectory() + "livelist-pg-serve-\(UUID().uuidString).yaml"
            try Data(Self.configuration.utf8).write(to: URL(fileURLWithPath: file))
            let url = PostgresCluster.url(cluster, database: databaseName)
            let common = ["--postgres", url, "--config", file]
            let a = try await ServeProcess.start(common + ["--slot", "livelist_a_\(databaseName)"])
            let b = try await ServeProcess.start(common + ["--slot", "livelist_b_\(databaseName)"])
            defer {
                a.kill()
                b.kill()
            }
            let seed = SeededRandomNumberGenerator.testSeed("PostgreSQL servers")
            var random = SeededRandomNumberGenerator(seed: seed)
            let moving = RoutedTransport(a.url)
            let clients = [
                WireClient(url: a.url, viewportRows: 12, window: 0..<30),
                WireClient(url: a.url, viewportRows: 8, window: 60..<90, transport: moving),
                WireClient(url: b.url, viewportRows: 20, window: 0..<40),
                WireClient(url: b.url, viewportRows: 10, window: 100..<130),
            ]
            clients[1].view.setContentOffset(60)
            clients[3].view.setContentOffset(100)
            let psql = (PostgresCluster.binaries() ?? "") + "/psql"

            /// Every client equals the SELECT, all under one epoch (the database's and the query's; the
            /// positions may differ where one server's result also holds at another's), at positions
            /// the database has reached.
            @MainActor func quiet(_ step: String, sameEpoch: Bool = true, only indices: [Int] = [0, 1, 2, 3]) async throws {
                let clients = indices.map { clients[$0] }
                let oracle = try await Self.select(writer)
                do {
                    try await eventually("\(step): every client equals the SELECT (seed \(seed))") {
                        clients.allSatisfy { $0.matches(oracle) } && (!sameEpoch || Set(clients.map { $0.remote.model.version?.epoch }).count == 1)
                    }
                } catch {
                    for (index, client) in clients.enumerated() {
                        Issue.record("client \(index): \(client.mismatch(oracle) ?? "equal") at \(client.remote.model.version.map(String.init(describing:)) ?? "no version"), \(client.remote.connectionState)")
                    }
                    throw error
                }
                let position = try await Self.strings(writer, "SELECT pg_current_wal_lsn()::text").first ?? ""
                let halves = position.split(separator: "/").compactMap { UInt64($0, radix: 16) }
                for (index, client) in zip(indices, clients) {
                    let version = client.remote.model.version
                    let sequence = version?.sequence ?? .max
                    #expect(halves.count == 2 && sequence > 0 && sequence <= (halves[0] << 32 | halves[1]),
                            "\(step): client \(index)'s version \(version.map(String.init(describing:)) ?? "none") is a position reached")
                }
            }

            /// Random transactions, from the app's connection and from psql, another process.
            @MainActor func writes(_ count: Int) async throws {
                for index in 0..<count {
                    let statements = Self.randomStatements(&random)
                    if index % 3 == 2 {
                        let command = [psql, "-h", cluster.folder, "-U", "postgres", "-d", databaseName, "-v", "ON_ERROR_STOP=1", "-q",
                                       "-c", (["BEGIN"] + statements + ["COMMIT"]).joined(separator: ";")]
                        _ = try await onOwnThread { try PostgresCluster.run(command, asServerUser: false) }
                    } else {
                        try await writer.query("BEGIN", logger: PostgresCluster.logger)
                        for statement in statements { try await writer.query(PostgresQuery(unsafeSQL: statement), logger: PostgresCluster.logger) }
                        try await writer.query(random.next(upTo: 5) == 0 ? "ROLLBACK" : "COMMIT", logger: PostgresCluster.logger)
                    }
                }
            }

            try await quiet("first states", sameEpoch: false)
            for round in 0..<3 {
                try await writes(12)
                try await quiet("round \(round)")
            }

            // The instance of the first two clients dies; the second client's load balancer sends it to the other one.
            let resetsBefore = clients[1].remote.resetsReceived
            a.kill()
            moving.route(to: b.url)
            try await writes(10)
            try await eventually("the moved client on the other instance (seed \(seed))") {
                clients[1].remote.connectionState == .live
            }
            // The first client waits for its instance; the others follow.
            try await quiet("after the kill", only: [1, 2, 3])
            // Its version is a commit position the other instance knows: it resumes there, with one changeset, no reset.
            #expect(clients[1].remote.resetsReceived == resetsBefore, "the moved client resumed (last reset: \(String(describing: clients[1].remote.model.lastResetReason)))")
            #expect(clients[1].view.violations.isEmpty)
            // Restarted on its port with its persistent slot: the first client comes back to it.
            #expect(try await a.launch(), "\(a.log)")
            try await writes(10)
            try await quiet("after the restart")

            // PostgreSQL itself restarts: every connection of both instances is cut; they reconnect and catch up.
            try await PostgresCluster.restart()
            let newWriter = try await PostgresConnection.connect(configuration: configuration, id: 9, logger: PostgresCluster.logger)
            try? await writer.close()
            do {
                var random2 = random
                for _ in 0..<8 {
                    let statements = Self.randomStatements(&random2)
                    try await newWriter.query("BEGIN", logger: PostgresCluster.logger)
                    for statement in statements { try await newWriter.query(PostgresQuery(unsafeSQL: statement), logger: PostgresCluster.logger) }
                    try await newWriter.query("COMMIT", logger: PostgresCluster.logger)
                }
                let oracle = try await Self.select(newWriter)
                try await eventually("after PostgreSQL's restart (seed \(seed))", seconds: 60) {
                    clients.allSatisfy { $0.matches(oracle) } && Set(clients.map { $0.remote.model.version?.epoch }).count == 1
                }
                for client in clients {
                    #expect(client.view.violations.isEmpty)
                    client.remote.stop()
                }
                #expect(await b.terminate() == 0, "a graceful shutdown on SIGTERM")
                a.kill()
                // The instances' persistent slots outlive them until dropped, as a retired instance's must be.
                let slots = try await Self.strings(newWriter, "SELECT slot_name::text FROM pg_replication_slots WHERE database = current_database() ORDER BY 1")
                #expect(slots == ["livelist_a_\(databaseName)", "livelist_b_\(databaseName)"])
                try await newWriter.query(PostgresQuery(unsafeSQL: "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = current_database()"),
                                          logger: PostgresCluster.logger)
            } catch {
                try? await newWriter.close()
                throw error
            }
            try await newWriter.close()
        }
    }

    static let mutationsConfiguration = configuration + """

        mutations:
          - name: archive
            parameters:
              - { name: id, type: integer }
            statements:
              - sql: UPDATE message SET folder = 'archive' WHERE id = :id AND folder = 'inbox'
                mustChangeRows: true
          - name: note
            parameters:
              - { name: subject, type: text }
            statements:
              - sql: INSERT INTO message (day, contact_id, subject, folder) VALUES (9, 1, :subject, 'inbox')
        """

    @Test("Mutations over two instances: mutated after the changes of its commit, one mutation sent to both at once applied once, a locked row refused unused")
    func mutationsOnTwoInstances() async throws {
        guard let cluster = try await PostgresCluster.running() else { return }
        try await PostgresCluster.exclusively {
            let (configuration, writer) = try await PostgresCluster.database(cluster)
            do {
                for statement in Self.schema.components(separatedBy: ";\n") { try await writer.query(PostgresQuery(unsafeSQL: statement), logger: PostgresCluster.logger) }
                let file = NSTemporaryDirectory() + "livelist-pg-mutations-\(UUID().uuidString).yaml"
                try Data(Self.mutationsConfiguration.utf8).write(to: URL(fileURLWithPath: file))
                let common = ["--postgres", PostgresCluster.url(cluster, database: configuration.database ?? ""), "--config", file]
                let a = try await ServeProcess.start(common)
                let b = try await ServeProcess.start(common)
                defer {
                    a.kill()
                    b.kill()
                }
                // On a connection with a subscription: `mutated` follows the changes of its commit.
                let wire = try await MutationTests.Wire(a.url)
                wire.send(.subscribe(WireSubscription(sub: 1, query: "inbox", window: WireWindow(start: 0, count: 500))))
                guard case let .reset(reset) = try await wire.next() else { Issue.record("no reset"); return }
                let target = try #require(try await Self.select(writer).rows.first?.first)
                wire.send(.mutate(WireMutation(client: "pg", id: 1, name: "archive", arguments: ["id": target])))
                var version = reset.version
                var deleted = 0
                for message in try await wire.untilAnswer(to: 1) {
                    switch message {
                    case let .changes(changes):
                        #expect(changes.from == version)
                        version = changes.to
                        deleted += changes.changes.itemDeletes.count
                    case let .mutated(mutated):
                        #expect(deleted == 1 && mutated.versions == [1: version], "\(mutated)")
                    default:
                        Issue.record("unexpected \(message)")
                    }
                }
                // One mutation on two connections at once, rounds `rounds` (new clients and known
                // ones): applied once, the other answered as a duplicate.
                func race(_ first: MutationTests.Wire, _ second: MutationTests.Wire, rounds: Range<Int>) async throws {
                    for round in rounds {
                        let mutation = WireMutation(client: "twin-\(round % 4)", id: Int64(round / 4 + 1), name: "note", arguments: ["subject": .text("n\(round)")])
                        first.send(.mutate(mutation))
                        second.send(.mutate(mutation))
                        let answers = [try await first.untilAnswer(to: mutation.id).last, try await second.untilAnswer(to: mutation.id).last]
                        let duplicates = answers.compactMap { answer -> Bool? in
                            guard case let .mutated(mutated)? = answer else { return nil }
                            return mutated.duplicate
                        }
                        #expect(duplicates.sorted { !$0 && $1 } == [false, true], "round \(round): \(answers)")
                        let copies = try await Self.strings(writer, "SELECT id::text FROM message WHERE subject = 'n\(round)'")
                        #expect(copies.count == 1, "round \(round): \(copies.count) rows")
                    }
                }
                // To both instances; then to one instance, whose mutations run one after another.
                let onA = try await MutationTests.Wire(a.url)
                let onB = try await MutationTests.Wire(b.url)
                try await race(onA, onB, rounds: 0..<12)
                let onA2 = try await MutationTests.Wire(a.url)
                try await race(onA, onA2, rounds: 12..<20)
                onA2.connection.close()
                // A row locked elsewhere past the mutations' lock timeout: nothing applied, the number
                // unused; sent again once the lock is gone, applied.
                let locked = try #require(try await Self.select(writer).rows.first?.first)
                guard case let .integer(lockedID) = locked else { Issue.record("id \(locked)"); return }
                try await writer.query("BEGIN", logger: PostgresCluster.logger)
                try await writer.query(PostgresQuery(unsafeSQL: "SELECT id FROM message WHERE id = \(lockedID) FOR UPDATE"), logger: PostgresCluster.logger)
                onA.send(.mutate(WireMutation(client: "pg", id: 2, name: "archive", arguments: ["id": locked])))
                guard case let .error(busy)? = try await onA.untilAnswer(to: 2).last else { Issue.record("no error for a locked row"); return }
                #expect(busy.code == .mutationUnavailable, "\(busy)")
                try await writer.query("ROLLBACK", logger: PostgresCluster.logger)
                onA.send(.mutate(WireMutation(client: "pg", id: 2, name: "archive", arguments: ["id": locked])))
                guard case let .mutated(archived)? = try await onA.untilAnswer(to: 2).last else { Issue.record("not applied once unlocked"); return }
                #expect(!archived.duplicate)
                for connection in [wire, onA, onB] { connection.connection.close() }
                #expect(await a.terminate() == 0, "\(a.log)")
                #expect(await b.terminate() == 0, "\(b.log)")
            } catch {
                try? await writer.close()
                throw error
            }
            try await writer.close()
        }
    }

    @Test("serve --demo --postgres: the inbox in PostgreSQL with its writer, shown by demo --remote headlessly with 0 inconsistencies")
    func demoOverPostgres() async throws {
        guard let cluster = try await PostgresCluster.running() else { return }
        try await PostgresCluster.exclusively {
            let (configuration, connection) = try await PostgresCluster.database(cluster)
            try await connection.close()
            let server = try await ServeProcess.start(["--demo", "--postgres", PostgresCluster.url(cluster, database: configuration.database ?? ""),
                                                       "--rows", "3000", "--writes-per-second", "80"])
            defer { server.kill() }
            let command = [ServeProcess.executable, "demo", "--remote", server.url, "--headless", "--duration", "3"]
            let output = try await onOwnThread { try PostgresCluster.run(command, asServerUser: false) }
            let summary = output.split(separator: "\n").last.map(String.init) ?? ""
            #expect(summary.hasPrefix("demo: ") && summary.contains(" 0 inconsistencies") && !summary.hasPrefix("demo: 0 batches"), "\(summary)")
            #expect(await server.terminate() == 0, "\(server.log)")
        }
    }
}
