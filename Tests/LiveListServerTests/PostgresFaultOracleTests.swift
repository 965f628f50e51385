import Foundation
import ListTesting
import LiveListClient
import LiveListWire
import Logging
import OwnThread
import PostgresNIO
import ScratchPostgres
import Testing

/// Sees every frame a client sends and receives, and checks the promises of versions: each
/// `changes` starts at the version its subscription holds (the one a `resume` named, or the last
/// message's), and a version never goes back. It also routes the client (a load balancer that
/// sends it to another instance) and can cut its connection at any moment.
final class AuditedTransport: RemoteTransport, @unchecked Sendable {
    // `@unchecked Sendable`: every stored property is only touched under `lock`.
    private let lock = NSLock()
    private var target: String
    private var held: [Int: WireVersion] = [:]
    private var closeCurrent: (@Sendable () -> Void)?
    private(set) var violations: [String] = []
    private(set) var changes = 0
    private(set) var resets = 0
    /// Subscriptions with `resume`, and those of them answered with a reset.
    private(set) var resumes = 0
    private(set) var resumesReset = 0
    private var resuming: Set<Int> = []
    private var resumedFrom: [Int: WireVersion] = [:]
    private(set) var resetReasons: [String] = []
    /// The last frames each way (`>` sent, `<` received), cut to 600 bytes: printed for a client
    /// that fails its check, to say what it was told.
    private var frames: [String] = []
    private let base = WebSocketTransport()

    var lastFrames: [String] { lock.withLock { frames } }

    private func log(_ direction: String, _ frame: String) {
        lock.withLock {
            frames.append(direction + " " + String(frame.prefix(600)))
            if frames.count > 40 { frames.removeFirst(frames.count - 40) }
        }
    }

    init(_ target: String) { self.target = target }

    func route(to url: String) { lock.withLock { target = url } }

    /// Where the client connects now.
    var route: String { lock.withLock { target } }

    /// Cuts the connection, as a network or an instance going away would.
    func cut() { lock.withLock { closeCurrent }?() }

    var audit: (violations: [String], changes: Int, resets: Int, resumes: Int, resumesReset: Int) {
        lock.withLock { (violations, changes, resets, resumes, resumesReset) }
    }

    func connect(to url: String) async throws -> RemoteConnection {
        let connection = try await base.connect(to: lock.withLock { target })
        lock.withLock { closeCurrent = connection.close }
        let (frames, continuation) = AsyncThrowingStream<String, any Error>.makeStream()
        let forward = Task {
            do {
                for try await frame in connection.frames {
                    self.received(frame)
                    continuation.yield(frame)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in forward.cancel() }
        return RemoteConnection(frames: frames, send: { [weak self] frame in
            self?.sent(frame)
            connection.send(frame)
        }, close: connection.close)
    }

    private func sent(_ frame: String) {
        log(">", frame)
        guard case let .subscribe(subscription)? = try? ClientMessage.decode(Array(frame.utf8)) else { return }
        lock.withLock {
            held[subscription.sub] = subscription.resume?.version
            if subscription.resume != nil {
                resumes += 1
                resuming.insert(subscription.sub)
                resumedFrom[subscription.sub] = subscription.resume?.version
            }
        }
    }

    private func received(_ frame: String) {
        log("<", frame)
        guard let message = try? ServerMessage.decode(Array(frame.utf8)) else { return }
        lock.withLock {
            switch message {
            case let .reset(reset):
                resets += 1
                if let resumed = resuming.remove(reset.sub) {
                    resumesReset += 1
                    resetReasons.append("\(reset.reason) from \(resumedFrom[resumed].map(String.init(describing:)) ?? "?") to \(reset.version)")
                }
                if let previous = held[reset.sub], previous.epoch == reset.version.epoch, reset.version.sequence < previous.sequence {
                    violations.append("sub \(reset.sub): a reset back from \(previous) to \(reset.version)")
                }
                held[reset.sub] = reset.version
            case let .changes(message):
                changes += 1
                resuming.remove(message.sub)
                if held[message.sub] != message.from {
                    violations.append("sub \(message.sub): changes from \(message.from) while it holds \(held[message.sub].map(String.init(describing:)) ?? "nothing")")
                }
                if message.from.epoch == message.to.epoch, message.to.sequence < message.from.sequence {
                    violations.append("sub \(message.sub): changes back from \(message.from) to \(message.to)")
                }
                held[message.sub] = message.to
            case let .rows(rows):
                if let previous = held[rows.sub], previous != rows.version { violations.append("sub \(rows.sub): rows at \(rows.version), holds \(previous)") }
            default: break
            }
        }
    }
}

/// Two `livelist serve --postgres` instances, five published queries of every shape, concurrent
/// writers and faults at random moments — instances killed and restarted, PostgreSQL restarted,
/// writers terminated mid-transaction, TRUNCATE, ALTER TABLE, VACUUM FULL — and clients that
/// move between the instances: at each quiet point every client equals the SELECT, and every
/// message of every client started at the version it held, never going back.
@Suite("Exact across instances and faults", .serialized, .timeLimit(.minutes(5)), .enabled(if: PostgresCluster.isPresent, "PostgreSQL's server binaries are not installed"))
struct PostgresFaultOracleTests {
    static let schema = """
        CREATE TABLE contact (id bigint PRIMARY KEY, name text COLLATE "C" NOT NULL);
        CREATE TABLE tag (id bigint PRIMARY KEY, label text COLLATE "C");
        CREATE TABLE message (id bigserial PRIMARY KEY, day bigint NOT NULL, contact_id bigint NOT NULL, tag_id bigint,
                              subject text COLLATE "C" NOT NULL, note text COLLATE "C", folder text NOT NULL);
        CREATE INDEX ON message (contact_id);
        CREATE INDEX ON message (tag_id);
        INSERT INTO contact SELECT g, 'c' || g FROM generate_series(1, 12) g;
        INSERT INTO tag SELECT g, CASE WHEN g % 4 = 0 THEN NULL ELSE 't' || g END FROM generate_series(1, 6) g;
        INSERT INTO message (day, contact_id, tag_id, subject, note, folder)
        SELECT g % 8, 1 + g % 12, CASE WHEN g % 5 = 0 THEN NULL ELSE 1 + g % 6 END, 's' || g, CASE WHEN g % 3 = 0 THEN NULL ELSE 'n' || (g % 17) END,
               CASE WHEN g % 10 < 7 THEN 'inbox' ELSE 'archive' END FROM generate_series(1, 300) g
        """

    /// A published query and its SELECT as the oracle runs it (arguments inlined), with its section's column.
    struct Query {
        var name: String
        var sql: String
        var section: String?
        /// The index of the section's column in the SELECT's columns.
        var sectionColumn: Int?
        var oracleSQL: String { sql.replacingOccurrences(of: ":folder", with: "'inbox'") }
    }

    static let queries = [
        Query(name: "inbox", sql: "SELECT m.id, m.day, c.name AS sender, m.subject FROM message m JOIN contact c ON c.id = m.contact_id "
              + "WHERE m.folder = :folder ORDER BY m.day DESC, sender, m.id", section: "m.day", sectionColumn: 1),
        Query(name: "notes", sql: "SELECT m.id, m.note, m.subject FROM message m WHERE m.folder = 'inbox' ORDER BY m.note NULLS FIRST, m.id"),
        Query(name: "tagged", sql: "SELECT m.id, t.label, m.subject FROM message m LEFT JOIN tag t ON t.id = m.tag_id ORDER BY t.label, m.id"),
        Query(name: "counts", sql: "SELECT c.id, c.name, count(m.id) AS n FROM contact c LEFT JOIN message m ON m.contact_id = c.id "
              + "GROUP BY c.id, c.name ORDER BY n DESC, c.id"),
        Query(name: "latest", sql: "SELECT id, subject FROM message ORDER BY id DESC LIMIT 25"),
    ]

    static var configuration: String {
        "queries:\n" + queries.map { query in
            var entry = "  - name: \(query.name)\n    sql: \(query.sql)\n"
            if let section = query.section { entry += "    section: \(section)\n" }
            if query.sql.contains(":folder") { entry += "    parameters:\n      - { name: folder, type: text, default: inbox }\n" }
            return entry
        }.joined()
    }

    /// The query's answer now, read independently of LiveList: sections and rows, as the wire carries them.
    static func select(_ query: Query, _ connection: PostgresConnection) async throws -> (sections: [WireSection], rows: [[WireValue]]) {
        var rows: [[WireValue]] = []
        var sections: [WireSection] = []
        for try await row in try await connection.query(PostgresQuery(unsafeSQL: query.oracleSQL), logger: PostgresCluster.logger) {
            let values = row.map { cell -> WireValue in
                guard var bytes = cell.bytes else { return .null }
                switch cell.dataType {
                case .int8: return .integer(bytes.readInteger(as: Int64.self) ?? 0)
                case .int4: return .integer(Int64(bytes.readInteger(as: Int32.self) ?? 0))
                default: return .text(bytes.readString(length: bytes.readableBytes) ?? "")
                }
            }
            rows.append(values)
            let key = query.sectionColumn.map { values[$0] } ?? .null
            if sections.last?.key == key { sections[sections.count - 1].count += 1 } else { sections.append(WireSection(key: key, count: 1)) }
        }
        return (sections, rows)
    }

    static let names = ["Zoë", "Zoe\u{308}", "a", "A", "😀", "ß", "E\u{301}", "É", "x y", "Ω", "\u{212B}", "Å"]

    /// One random transaction over every table.
    static func randomStatements(_ random: inout SeededRandomNumberGenerator) -> [String] {
        (0..<random.next(upTo: 3) + 1).map { _ in
            let id = random.next(upTo: 330) + 1
            let name = names[random.next(upTo: names.count)]
            switch random.next(upTo: 10) {
            case 0: return "INSERT INTO message (day, contact_id, tag_id, subject, note, folder) VALUES (\(random.next(upTo: 8)), \(random.next(upTo: 12) + 1), "
                + "\(random.next(upTo: 3) == 0 ? "NULL" : String(random.next(upTo: 6) + 1)), '\(name)', \(random.next(upTo: 3) == 0 ? "NULL" : "'\(name)'"), 'inbox')"
            case 1: return "UPDATE message SET day = \(random.next(upTo: 8)) WHERE id = \(id)"
            case 2: return "UPDATE message SET folder = CASE folder WHEN 'inbox' THEN 'archive' ELSE 'inbox' END WHERE id = \(id)"
            case 3: return "UPDATE contact SET name = '\(name)\(id % 3)' WHERE id = \(id % 12 + 1)"
            case 4: return "UPDATE message SET contact_id = \(random.next(upTo: 12) + 1), tag_id = \(random.next(upTo: 6) + 1) WHERE id = \(id)"
            case 5: return "DELETE FROM message WHERE id = \(id)"
            case 6: return "UPDATE tag SET label = \(random.next(upTo: 4) == 0 ? "NULL" : "'\(name)'") WHERE id = \(random.next(upTo: 6) + 1)"
            case 7: return "UPDATE message SET note = \(random.next(upTo: 3) == 0 ? "NULL" : "'\(name)'") WHERE id % 7 = \(id % 7)"
            case 8: return "UPDATE message SET id = id + 1000 WHERE id = \(id)"
            default: return "UPDATE message SET subject = subject || '\(name)' WHERE id % 9 = \(id % 9)"
            }
        }
    }

    /// A fault among those an operator meets.
    enum Fault: CaseIterable {
        case none, killInstance, restartPostgres, terminateWriter, truncate, addColumn, dropColumn, vacuumFull, moveClients
    }

    @Test("two instances, five query shapes, concurrent writers and random faults: every client equals the SELECT at each quiet point; every message starts at the held version and none goes back")
    @MainActor
    func faults() async throws {
        try await Self.withDatabase(Self.run)
    }

    /// Runs `body` with the throwaway cluster to itself, a fresh database and a writer connection
    /// to it (which `body` may replace: a restart cuts it); the writer is closed after.
    @MainActor
    static func withDatabase(_ body: @MainActor (PostgresCluster.Running, PostgresConnection.Configuration, inout PostgresConnection) async throws -> Void)
        async throws {
        guard let cluster = try await PostgresCluster.running() else { return }
        try await PostgresCluster.exclusively {
            let (configuration, writer) = try await PostgresCluster.database(cluster)
            var current = writer
            do {
                try await body(cluster, configuration, &current)
            } catch {
                try? await current.close()
                throw error
            }
            try? await current.close()
        }
    }

    /// The schema and the five queries in the database, served by two `livelist serve` instances
    /// with persistent slots named `prefix` + `a`/`b`.
    static func startInstances(_ cluster: PostgresCluster.Running, _ configuration: PostgresConnection.Configuration, _ writer: PostgresConnection,
                               slotPrefix: String) async throws -> [ServeProcess] {
        let databaseName = configuration.database ?? ""
        for statement in schema.components(separatedBy: ";\n") { try await writer.query(PostgresQuery(unsafeSQL: statement), logger: PostgresCluster.logger) }
        let file = NSTemporaryDirectory() + "livelist-pg-faults-\(UUID().uuidString).yaml"
        try Data(Self.configuration.utf8).write(to: URL(fileURLWithPath: file))
        let common = ["--postgres", PostgresCluster.url(cluster, database: databaseName), "--config", file]
        return [try await ServeProcess.start(common + ["--slot", "\(slotPrefix)a_\(databaseName)"]),
                try await ServeProcess.start(common + ["--slot", "\(slotPrefix)b_\(databaseName)"])]
    }

    @MainActor
    static func run(_ cluster: PostgresCluster.Running, _ configuration: PostgresConnection.Configuration, _ writer: inout PostgresConnection) async throws {
        let databaseName = configuration.database ?? ""
        let instances = try await startInstances(cluster, configuration, writer, slotPrefix: "livelist_f")
        defer { for instance in instances { instance.kill() } }
        let seed = SeededRandomNumberGenerator.testSeed("PostgreSQL faults")
        var random = SeededRandomNumberGenerator(seed: seed)

        // Every query on both instances; whole lists and windows; two clients of each instance move.
        var clients: [(client: WireClient, query: Query, transport: AuditedTransport, home: Int)] = []
        for (index, query) in queries.enumerated() {
            for home in 0..<2 {
                let transport = AuditedTransport(instances[home].url)
                let window = index % 2 == 0 ? 0..<400 : 40..<100
                let client = WireClient(url: instances[home].url, query: query.name, viewportRows: 10, window: window, transport: transport)
                if window.lowerBound > 0 { client.view.setContentOffset(window.lowerBound) }
                clients.append((client, query, transport, home))
            }
        }
        var alive = [true, true]
        let psql = (PostgresCluster.binaries() ?? "") + "/psql"

        @MainActor func quiet(_ step: String) async throws {
            var oracles: [String: (sections: [WireSection], rows: [[WireValue]])] = [:]
            for query in queries { oracles[query.name] = try await select(query, writer) }
            let watched = clients.filter { alive[$0.home] }
            let started = ContinuousClock.now
            var told = false
            do {
                try await eventually("\(step): every client equals the SELECT (seed \(seed))", seconds: 60) {
                    let equal = watched.allSatisfy { $0.client.matches(oracles[$0.query.name] ?? ([], [])) }
                    if !equal, !told, started.duration(to: .now) > .seconds(5) {
                        // Slow to settle: what differs then (a list may catch up later, but not this late).
                        told = true
                        for entry in watched where !entry.client.matches(oracles[entry.query.name] ?? ([], [])) {
                            print("\(step), after 5 s: \(entry.query.name) on \(entry.home): \(entry.client.mismatch(oracles[entry.query.name] ?? ([], [])) ?? ""), "
                                  + "\(entry.client.remote.connectionState)")
                        }
                    }
                    return equal
                }
            } catch {
                for entry in watched {
                    let mismatch = entry.client.mismatch(oracles[entry.query.name] ?? ([], []))
                    Issue.record("\(step): \(entry.query.name) on \(entry.home): \(mismatch ?? "equal"), \(entry.client.remote.connectionState)")
                    if mismatch != nil {
                        print("\(step): \(entry.query.name) on \(entry.home), window \(entry.client.remote.model.window), its last frames:\n"
                              + entry.transport.lastFrames.joined(separator: "\n"))
                    }
                }
                throw error
            }
            for entry in clients {
                let audit = entry.transport.audit
                #expect(audit.violations.isEmpty, "\(step): \(entry.query.name) (seed \(seed)): \(audit.violations)")
                #expect(entry.client.view.violations.isEmpty, "\(step): \(entry.query.name): \(entry.client.view.violations)")
            }
        }

        /// Concurrent transactions: the app's connection and psql, another process, some rolled back.
        @MainActor func writes(_ count: Int) async throws {
            let batches = (0..<count).map { _ in (randomStatements(&random), random.next(upTo: 5) == 0) }
            let psqlBatches = (0..<count / 2).map { _ in randomStatements(&random) }
            let database = databaseName
            async let external: Void = onOwnThread {
                for statements in psqlBatches {
                    _ = try? PostgresCluster.run([psql, "-h", cluster.folder, "-U", "postgres", "-d", database, "-q",
                                                  "-c", (["BEGIN"] + statements + ["COMMIT"]).joined(separator: ";")], asServerUser: false)
                }
            }
            for (statements, rollback) in batches {
                do {
                    try await writer.query("BEGIN", logger: PostgresCluster.logger)
                    for statement in statements { try await writer.query(PostgresQuery(unsafeSQL: statement), logger: PostgresCluster.logger) }
                    try await writer.query(rollback ? "ROLLBACK" : "COMMIT", logger: PostgresCluster.logger)
                } catch {
                    // A key update that collides, say: the transaction is rolled back.
                    _ = try? await writer.query("ROLLBACK", logger: PostgresCluster.logger)
                }
            }
            await external
        }

        try await quiet("first states")
        var faults: [Fault] = []
        var timings: [String] = []
        for round in 0..<12 {
            let roundStarted = ContinuousClock.now
            defer { timings.append("\(faults.last.map { "\($0)" } ?? "?") \(roundStarted.duration(to: .now))") }
            // LIVELIST_FAULTS=restartPostgres,killInstance runs only those (to chase one).
            let chosen = ProcessInfo.processInfo.environment["LIVELIST_FAULTS"].map { names in Fault.allCases.filter { names.contains("\($0)") } } ?? []
            let pool = chosen.isEmpty ? Fault.allCases : chosen
            let fault = round == 0 ? Fault.none : pool[random.next(upTo: pool.count)]
            faults.append(fault)
            switch fault {
            case .none:
                try await writes(10)
            case .killInstance:
                let victim = random.next(upTo: 2)
                instances[victim].kill()
                alive[victim] = false
                // Its clients move to the other instance, which a load balancer would do.
                for entry in clients where entry.transport.route == instances[victim].url { entry.transport.route(to: instances[1 - victim].url) }
                try await writes(10)
                try await quiet("round \(round): instance \(victim) killed")
                #expect(try await instances[victim].launch(), "\(instances[victim].log)")
                alive[victim] = true
                for entry in clients where entry.home == victim { entry.transport.route(to: instances[victim].url) }
                for entry in clients where entry.home == victim { entry.transport.cut() }
                try await writes(6)
            case .restartPostgres:
                // Under writes from another process: some of them land, some fail with the server gone.
                let batches = (0..<12).map { _ in randomStatements(&random) }
                let database = databaseName
                let during = Task {
                    await onOwnThread {
                        for statements in batches {
                            _ = try? PostgresCluster.run([psql, "-h", cluster.folder, "-U", "postgres", "-d", database, "-q",
                                                          "-c", (["BEGIN"] + statements + ["COMMIT"]).joined(separator: ";")], asServerUser: false)
                        }
                    }
                }
                try await Task.sleep(for: .milliseconds(30))
                try await PostgresCluster.restart()
                await during.value
                try? await writer.close()
                writer = try await PostgresConnection.connect(configuration: configuration, id: 9, logger: PostgresCluster.logger)
                try await writes(8)
            case .terminateWriter:
                let other = try await PostgresConnection.connect(configuration: configuration, id: 8, logger: PostgresCluster.logger)
                try await other.query("BEGIN", logger: PostgresCluster.logger)
                try await other.query("UPDATE message SET day = (day + 1) % 8 WHERE id % 4 = 0", logger: PostgresCluster.logger)
                try await writer.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '' AND state = 'idle in transaction'",
                                       logger: PostgresCluster.logger)
                try? await other.close()
                try await writes(8)
            case .truncate:
                try await writer.query("BEGIN", logger: PostgresCluster.logger)
                try await writer.query("CREATE TEMP TABLE keep ON COMMIT DROP AS SELECT * FROM message", logger: PostgresCluster.logger)
                try await writer.query("TRUNCATE message", logger: PostgresCluster.logger)
                try await writer.query("INSERT INTO message SELECT * FROM keep WHERE id % 3 <> 0", logger: PostgresCluster.logger)
                try await writer.query("COMMIT", logger: PostgresCluster.logger)
                try await writes(6)
            case .addColumn:
                try await writer.query("ALTER TABLE message ADD COLUMN IF NOT EXISTS extra integer DEFAULT 1", logger: PostgresCluster.logger)
                try await writes(6)
            case .dropColumn:
                try await writer.query("ALTER TABLE message DROP COLUMN IF EXISTS extra", logger: PostgresCluster.logger)
                try await writes(6)
            case .vacuumFull:
                try await writes(4)
                try await writer.query("VACUUM FULL message", logger: PostgresCluster.logger)
                try await writes(4)
            case .moveClients:
                for entry in clients where random.next(upTo: 3) == 0 {
                    entry.transport.route(to: instances[random.next(upTo: 2)].url)
                    entry.transport.cut()
                }
                try await writes(8)
            }
            try await quiet("round \(round) after \(fault)")
        }
        var summary: [String] = []
        for entry in clients {
            let audit = entry.transport.audit
            #expect(audit.changes > 0, "\(entry.query.name): changes came")
            summary.append("\(entry.query.name)@\(entry.home): \(audit.resumes) resumes, \(audit.resumesReset) reset, \(audit.resets) resets \(entry.transport.resetReasons)")
            entry.client.remote.stop()
        }
        print("PostgreSQL faults seed \(seed): \(faults.map { "\($0)" }.joined(separator: ", "))\n" + summary.joined(separator: "\n"))
        let stopping = ContinuousClock.now
        for instance in instances { #expect(await instance.terminate() == 0, "a graceful shutdown on SIGTERM: \(instance.log)") }
        print("PostgreSQL faults seed \(seed): rounds took \(timings.joined(separator: ", ")); the instances stopped in \(stopping.duration(to: .now))")
        try await writer.query(PostgresQuery(unsafeSQL: "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = current_database()"),
                               logger: PostgresCluster.logger)
    }
}
