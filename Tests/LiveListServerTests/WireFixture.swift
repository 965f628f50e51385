import Foundation
import GRDB
import Hummingbird
import ListDiff
import LiveListClient
import LiveListServer
import LiveListServerSQLite
import LiveListWire
import LiveQuery
import ListTesting
import Logging
import ServiceLifecycle

struct TimeLimitExceeded: Error, CustomStringConvertible {
    var what: String
    var description: String { "\(what): not within the time limit" }
}

/// Lets the main actor run until `condition` holds, for at most `seconds` (a guard against a hang,
/// never a measurement).
@MainActor
func eventually(_ what: String, seconds: Double = 30, _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw TimeLimitExceeded(what: what) }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// ``eventually(_:seconds:_:)`` for a condition that awaits (a database read).
@MainActor
func eventuallyAsync(_ what: String, seconds: Double = 30, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TimeLimitExceeded(what: what) }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// A `livelist` server on a loopback port over a fresh SQLite file with a change log, publishing
/// the inbox query; stopped by ``stop()``.
final class WireFixture: Sendable {
    static let inboxSQL = "SELECT id, day, sender, subject FROM message WHERE folder = :folder ORDER BY day DESC, sender, id"
    let pool: DatabasePool
    let path: String
    let port: Int
    let server: LiveListServer
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    var url: String { "ws://127.0.0.1:\(port)/live" }

    static let inbox = PublishedQuery(name: "inbox", sql: inboxSQL, parameters: [QueryParameter("folder", type: .text, default: .text("inbox"))],
                                      section: "day")

    static func start(rows: Int, seed: UInt64, configuration: LiveListServer.Configuration = LiveListServer.Configuration(),
                      queries: [PublishedQuery] = [inbox], mutations: [PublishedMutation] = [],
                      busyTimeout: TimeInterval = 10) async throws -> WireFixture {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-wire-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("inbox.sqlite").path
        var databaseConfiguration = Configuration()
        databaseConfiguration.busyMode = .timeout(busyTimeout)
        let pool = try DatabasePool(path: path, configuration: databaseConfiguration)
        try await pool.write { db in
            var random = SeededRandomNumberGenerator(seed: seed)
            try db.execute(sql: "CREATE TABLE message(id INTEGER PRIMARY KEY, day INTEGER, sender TEXT, subject TEXT, folder TEXT)")
            for _ in 0..<rows { try Self.insert(db, &random) }
            try ChangeTracking.install(on: db, tables: ["message"])
        }
        let (server, port, group, running) = try await serveBelowEphemeralPorts {
            LiveListServer(database: pool, queries: queries, mutations: mutations, configuration: configuration, logger: Logger(label: "test.server"))
        }
        return WireFixture(pool: pool, path: path, port: port, server: server, group: group, running: running)
    }

    struct ServerDidNotStart: Error, CustomStringConvertible {
        var port: Int
        var reason: String
        var description: String { "the server did not listen on port \(port): \(reason)" }
    }

    /// Runs `server` on `port` (0: a free loopback port) until its group shuts down; returns once
    /// it listens. Throws when the server stops before it listens (a port still held, say) or does
    /// not listen within `seconds`: a test then fails instead of waiting for a port forever.
    static func serve(_ server: LiveListServer, port: Int = 0, seconds: Double = 30) async throws
        -> (port: Int, group: ServiceGroup, running: Task<Void, any Error>) {
        let (ports, portContinuation) = AsyncStream<Int?>.makeStream()
        let app = server.application(port: port) { port in portContinuation.yield(port) }
        let group = ServiceGroup(configuration: .init(services: [app], logger: Logger(label: "test.group")))
        let running = Task {
            defer { portContinuation.yield(nil) }
            try await group.run()
        }
        let timer = Task {
            try await Task.sleep(for: .seconds(seconds))
            portContinuation.yield(nil)
        }
        defer { timer.cancel() }
        for await bound in ports {
            if let bound { return (bound, group, running) }
            break
        }
        await group.triggerGracefulShutdown()
        let reason: String
        switch await running.result {
        case let .failure(error): reason = "\(error)"
        case .success: reason = "it stopped, or did not listen within \(seconds) s"
        }
        throw ServerDidNotStart(port: port, reason: reason)
    }

    /// Serves a server made by `make` on a free port below the kernel's ephemeral range (32768
    /// and up on Linux): a port the server had, once it closed, is never taken meanwhile by another
    /// test's outgoing connection, so ``restart(configuration:queries:)`` can bind it again.
    static func serveBelowEphemeralPorts(_ make: () -> LiveListServer) async throws
        -> (server: LiveListServer, port: Int, group: ServiceGroup, running: Task<Void, any Error>) {
        var attempt = 0
        while true {
            let server = make()
            do {
                let (port, group, running) = try await serve(server, port: Int.random(in: 20_000..<32_000))
                return (server, port, group, running)
            } catch is ServerDidNotStart where attempt < 50 {
                attempt += 1
            }
        }
    }

    private init(pool: DatabasePool, path: String, port: Int, server: LiveListServer, group: ServiceGroup, running: Task<Void, any Error>) {
        self.pool = pool
        self.path = path
        self.port = port
        self.server = server
        self.group = group
        self.running = running
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = await running.result
    }

    /// Stops the server and starts a new one (a new epoch: versions of the old one are unknown to
    /// it) over the same database, on the same port — retried for a while if the port is still
    /// held by the old server's closing socket.
    func restart(configuration: LiveListServer.Configuration = LiveListServer.Configuration(),
                 queries: [PublishedQuery] = [inbox], mutations: [PublishedMutation] = []) async throws -> WireFixture {
        await stop()
        var attempt = 0
        while true {
            let server = LiveListServer(database: pool, queries: queries, mutations: mutations, configuration: configuration,
                                        logger: Logger(label: "test.server"))
            do {
                let (port, group, running) = try await Self.serve(server, port: port)
                return WireFixture(pool: pool, path: path, port: port, server: server, group: group, running: running)
            } catch let error as ServerDidNotStart where attempt < 20 {
                print("restart on port \(port), attempt \(attempt): \(error)")
                attempt += 1
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    /// Text that tests exactness: both normalization forms of é, NUL, emoji, plain letters.
    static let alphabet: [String] = ["e\u{301}", "\u{E9}", "a", "b", "Z", "\0", "😀", " ", "ß", "i\u{307}", "Ω"]

    static func text(_ random: inout SeededRandomNumberGenerator) -> String {
        (0..<random.next(upTo: 6) + 1).map { _ in alphabet[random.next(upTo: alphabet.count)] }.joined()
    }

    static func insert(_ db: Database, _ random: inout SeededRandomNumberGenerator) throws {
        try db.execute(sql: "INSERT INTO message(day, sender, subject, folder) VALUES (?, ?, ?, ?)",
                       arguments: [random.next(upTo: 8), text(&random), text(&random), random.next(upTo: 10) < 7 ? "inbox" : "archive"])
    }

    /// One random write: insert, update of any column, delete, or REPLACE of an existing id.
    static func randomWrite(_ db: Database, _ random: inout SeededRandomNumberGenerator) throws {
        let maxID = try Int.fetchOne(db, sql: "SELECT max(id) FROM message") ?? 0
        let id = random.next(upTo: max(1, maxID)) + 1
        switch random.next(upTo: 6) {
        case 0: try insert(db, &random)
        case 1: try db.execute(sql: "UPDATE message SET sender = ? WHERE id = ?", arguments: [text(&random), id])
        case 2: try db.execute(sql: "UPDATE message SET day = ? WHERE id = ?", arguments: [random.next(upTo: 8), id])
        case 3: try db.execute(sql: "UPDATE message SET folder = CASE folder WHEN 'inbox' THEN 'archive' ELSE 'inbox' END WHERE id = ?", arguments: [id])
        case 4: try db.execute(sql: "DELETE FROM message WHERE id = ?", arguments: [id])
        default:
            try db.execute(sql: "REPLACE INTO message(id, day, sender, subject, folder) VALUES (?, ?, ?, ?, 'inbox')",
                           arguments: [id, random.next(upTo: 8), text(&random), text(&random)])
        }
    }

    /// `count` random writes (``randomWrite(_:_:)``), a transaction each, on the server's pool,
    /// continuing `random`'s sequence.
    func randomWrites(_ count: Int, _ random: inout SeededRandomNumberGenerator) async throws {
        for _ in 0..<count {
            let start = random
            random = try await pool.write { db in
                var random = start
                try Self.randomWrite(db, &random)
                return random
            }
        }
    }

    /// The query's answer now: sections (day, count) and rows (id, day, sender bytes, subject bytes).
    func select(folder: String = "inbox") throws -> (sections: [WireSection], rows: [[WireValue]]) {
        try pool.read { db in
            var rows: [[WireValue]] = []
            var sections: [WireSection] = []
            let cursor = try Row.fetchCursor(db, sql: Self.inboxSQL.replacingOccurrences(of: "SELECT id, day, sender, subject",
                with: "SELECT id, day, CAST(sender AS BLOB), CAST(subject AS BLOB)"), arguments: ["folder": folder])
            while let row = try cursor.next() {
                let values = (0..<4).map { Self.wire(row[$0] as DatabaseValue) }
                rows.append(values)
                if sections.last?.key == values[1] { sections[sections.count - 1].count += 1 } else { sections.append(WireSection(key: values[1], count: 1)) }
            }
            return (sections, rows)
        }
    }

    private static func wire(_ value: DatabaseValue) -> WireValue {
        switch value.storage {
        case .null: .null
        case let .int64(number): .integer(number)
        case let .double(number): .real(number)
        case let .string(text): .text(text)
        case let .blob(data): .text(String(decoding: data, as: UTF8.self))
        }
    }
}

extension SeededRandomNumberGenerator {
    /// A number in `0..<bound`.
    mutating func next(upTo bound: Int) -> Int { Int.random(in: 0..<bound, using: &self) }
}

/// A transport whose list takes frames only while its gate is open: with the real transport's
/// read-ahead bound, a closed gate stops the socket being read — a client that cannot keep up.
struct GatedTransport: RemoteTransport {
    /// Whether frames flow; waiters resume when it opens.
    final class Gate: @unchecked Sendable {
        // `@unchecked Sendable`: `isOpen` and `waiters` are read and written under `lock` only.
        private let lock = NSLock()
        private var isOpen = true
        private var waiters: [CheckedContinuation<Void, Never>] = []

        func close() { lock.withLock { isOpen = false } }

        func open() {
            let waiters = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
                isOpen = true
                defer { self.waiters = [] }
                return self.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        func pass() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let wait = lock.withLock { () -> Bool in
                    if isOpen { return false }
                    waiters.append(continuation)
                    return true
                }
                if !wait { continuation.resume() }
            }
        }
    }

    /// The frames of one connection, taken by one consumer at a time.
    private final class Frames: @unchecked Sendable {
        // `@unchecked Sendable`: the iterator is used by the connection's single consumer only.
        var iterator: AsyncThrowingStream<String, any Error>.AsyncIterator
        init(_ stream: AsyncThrowingStream<String, any Error>) { iterator = stream.makeAsyncIterator() }
    }

    let gate = Gate()
    let base = WebSocketTransport(inboundCapacity: 2)

    func connect(to url: String) async throws -> RemoteConnection {
        let connection = try await base.connect(to: url)
        let frames = Frames(connection.frames)
        let gate = gate
        return RemoteConnection(frames: AsyncThrowingStream(unfolding: {
            await gate.pass()
            return try await frames.iterator.next()
        }), send: connection.send, close: connection.close)
    }
}

extension WireFixture {
    /// The sqlite3 shell, when installed (CI installs it): another process writing the file.
    static let sqliteShell: String? = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3"].first { FileManager.default.isExecutableFile(atPath: $0) }

    struct ProcessFailed: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs `executable` with `arguments` to its end; throws when it fails.
    static func run(_ executable: String, _ arguments: [String]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            process.terminationHandler = { _ in continuation.resume() }
            do {
                try process.run()
            } catch {
                continuation.resume(throwing: error)
            }
        }
        guard process.terminationStatus == 0 else {
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw ProcessFailed(description: "\(executable) exited with \(process.terminationStatus): \(message)")
        }
    }
}
