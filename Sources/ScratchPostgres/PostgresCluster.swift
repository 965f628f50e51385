import Foundation
import ListDiff
import OwnThread
import Logging
import PostgresNIO
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL cluster for the tests: initdb and pg_ctl in a temporary folder (as the
/// `postgres` user when the tests run as root, which initdb refuses), `wal_level = logical`, a
/// Unix socket only. Started once per test process, stopped when it exits. Without PostgreSQL's
/// binaries the tests say so and skip — except when `LIVELIST_REQUIRE_POSTGRES` is set (CI).
public enum PostgresCluster {
    public struct Running: Sendable {
        public var folder: String
        public var socket: String
    }

    /// Started on a thread of its own, not on the test's: initdb and pg_ctl take seconds, and a
    /// blocked thread of the concurrency pool (two on two cores) would stall the tests running beside.
    private static let startup = ClusterStartup()

    public struct ClusterUnavailable: Error, CustomStringConvertible {
        public var description: String
    }

    public static var isRequired: Bool { ProcessInfo.processInfo.environment["LIVELIST_REQUIRE_POSTGRES"] != nil }

    /// Whether the PostgreSQL tests run: the server's binaries are installed, or PostgreSQL is
    /// required (where a missing one fails them). Suites skip visibly otherwise
    /// (`.enabled(if: PostgresCluster.isPresent)`).
    public static var isPresent: Bool { isRequired || binaries() != nil }

    /// The cluster, or `nil` (printed once) when PostgreSQL is absent and not required. A cluster
    /// that fails to start where the binaries are installed throws: a broken setup is a failure,
    /// never a silent pass.
    public static func running() async throws -> Running? {
        switch await startup.result() {
        case let .success(running): return running
        case let .failure(reason):
            if isPresent { throw reason }
            return nil
        }
    }

    public static func binaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }
        for version in versions where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        if let path = ProcessInfo.processInfo.environment["PATH"] {
            for folder in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(folder)/initdb") {
                return String(folder)
            }
        }
        return nil
    }

    static var isRoot: Bool { getuid() == 0 }

    /// Runs a command to its end, spawned directly (posix_spawn + waitpid) with its output in a
    /// file: pg_ctl forks the server, and Foundation's `Process` never reports the exit of a command
    /// that leaves a daemon behind (as with tmux in the CLI tests). Nothing of this process but
    /// the standard streams goes to the server, which outlives the call.
    @discardableResult
    public static func run(_ arguments: [String], asServerUser: Bool) throws(ClusterUnavailable) -> String {
        let command = asServerUser && isRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + arguments : arguments
        let outputPath = NSTemporaryDirectory() + "livelist-pg-command-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).log"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let pid = try spawn(command, outputPath: outputPath)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED && WEXITSTATUS == 0, spelled out (the macros are not imported).
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
            throw ClusterUnavailable(description: "\(arguments.joined(separator: " ")) failed (status \(status)): \(text)")
        }
        return text
    }

    /// Starts `command` (its path first) with its output in the file at `outputPath` and no
    /// descriptor of this process but the standard ones — a listening socket of a server in this
    /// process must not outlive it in a child — and returns its process id, without waiting.
    public static func spawn(_ command: [String], outputPath: String) throws(ClusterUnavailable) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // (glibc 2.34 has it; Swift's Glibc module does not declare it.)
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, 3)
        }
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, command[0], &actions, nil, &argv, environ)
        guard spawned == 0 else { throw ClusterUnavailable(description: "\(command[0]) did not start: errno \(spawned)") }
        return pid
    }

    fileprivate static func start() -> Result<Running, ClusterUnavailable> {
        guard let bin = binaries() else { return .failure(ClusterUnavailable(description: "no initdb (install PostgreSQL, e.g. Debian's postgresql)")) }
        let folder = Self.folder
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            if isRoot {
                try run(["/bin/chown", "postgres", folder], asServerUser: false)
            }
            try run([bin + "/initdb", "-D", folder + "/data", "--auth=trust", "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8"],
                    asServerUser: true)
            try startServer(bin)
        } catch let error as ClusterUnavailable {
            return .failure(error)
        } catch {
            return .failure(ClusterUnavailable(description: "\(error)"))
        }
        atexit {
            // The process is ending: a cluster that does not stop is all that could be reported, and nothing is left to report it to.
            if let bin = PostgresCluster.binaries() {
                _ = try? PostgresCluster.run([bin + "/pg_ctl", "-D", PostgresCluster.folder + "/data", "-m", "immediate", "-w", "stop"],
                                             asServerUser: true)
            }
            try? FileManager.default.removeItem(atPath: PostgresCluster.folder)
        }
        return .success(Running(folder: folder, socket: folder + "/.s.PGSQL.5432"))
    }

    public static let folder = NSTemporaryDirectory() + "livelist-pg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"

    public static let logger = Logger(label: "livelist.tests.postgres")

    private static let turns = Turns()

    /// Runs `body` while no other test uses the cluster through this: suites run in parallel, and a
    /// test that looks at the WAL (or counts the server's work) must see its own commits only.
    public static func exclusively<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async throws -> T {
        try await turns.take()
        do {
            let value = try await body()
            await turns.give()
            return value
        } catch {
            await turns.give()
            throw error
        }
    }

    public static func configuration(_ running: Running, database: String) -> PostgresConnection.Configuration {
        PostgresConnection.Configuration(unixSocketPath: running.socket, username: "postgres", password: nil, database: database)
    }

    /// A URL for `livelist serve --postgres` to reach `database` over the cluster's socket.
    public static func url(_ running: Running, database: String) -> String {
        "postgres://postgres@/\(database)?host=\(running.folder)"
    }

    /// Restarts the cluster (`pg_ctl restart`, fast mode): every connection is cut, temporary
    /// slots go, the WAL and persistent slots stay. `pg_ctl` is waited for on a thread of its
    /// own: a fast stop waits for the replication streams of this process to confirm what they
    /// were sent, which needs the cooperative pool that a blocking wait would hold.
    public static func restart() async throws {
        try await onOwnThread("livelist.pg_ctl") { try restartBlocking() }
    }

    private static func restartBlocking() throws(ClusterUnavailable) {
        guard let bin = binaries() else { throw ClusterUnavailable(description: "no pg_ctl") }
        try run([bin + "/pg_ctl", "-D", folder + "/data", "-l", folder + "/log", "-w", "-t", "60", "-m", "fast", "stop"], asServerUser: true)
        do {
            try startServer(bin)
        } catch {
            // A start that did not answer in time on a loaded machine: once more, and the log if not.
            _ = try? run([bin + "/pg_ctl", "-D", folder + "/data", "-m", "immediate", "-w", "stop"], asServerUser: true)
            do {
                try startServer(bin)
            } catch {
                let log = (try? String(contentsOfFile: folder + "/log", encoding: .utf8)) ?? ""
                throw ClusterUnavailable(description: "\(error.description)\nserver log:\n\(log.suffix(4_000))")
            }
        }
    }

    /// `pg_ctl start` with the cluster's settings: logical decoding, a Unix socket only.
    private static func startServer(_ bin: String) throws(ClusterUnavailable) {
        try run([bin + "/pg_ctl", "-D", folder + "/data", "-l", folder + "/log", "-w", "-t", "120", "-o",
                 "-k \(folder) -c listen_addresses='' -c wal_level=logical -c max_replication_slots=40 -c max_wal_senders=40 -c fsync=off",
                 "start"], asServerUser: true)
    }

    /// A new, empty database for one test, and a connection to it (the test's writer session).
    public static func database(_ running: Running) async throws -> (PostgresConnection.Configuration, PostgresConnection) {
        let name = "t_\(UInt64.random(in: 0...UInt64.max))"
        let admin = try await PostgresConnection.connect(configuration: configuration(running, database: "postgres"), id: 1, logger: logger)
        try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        try await admin.close()
        let configuration = configuration(running, database: name)
        return (configuration, try await PostgresConnection.connect(configuration: configuration, id: 2, logger: logger))
    }
}

/// The cluster's start, once, on its own thread; every caller awaits the same outcome.
final class ClusterStartup: Sendable {
    typealias Outcome = Result<PostgresCluster.Running, PostgresCluster.ClusterUnavailable>

    private struct State {
        var outcome: Outcome?
        var waiters: [CheckedContinuation<Outcome, Never>] = []
        var started = false
    }

    private let state = Locked(State())

    func result() async -> Outcome {
        await withCheckedContinuation { continuation in
            let (ready, start): (Outcome?, Bool) = state.withLock { state in
                if let outcome = state.outcome { return (outcome, false) }
                state.waiters.append(continuation)
                defer { state.started = true }
                return (nil, !state.started)
            }
            if let ready { continuation.resume(returning: ready) }
            guard start else { return }
            Thread.detachNewThread {
                let outcome = PostgresCluster.start()
                if case let .failure(reason) = outcome, !PostgresCluster.isRequired { print("PostgreSQL tests skipped: \(reason)") }
                let waiting: [CheckedContinuation<Outcome, Never>] = self.state.withLock { state in
                    state.outcome = outcome
                    defer { state.waiters = [] }
                    return state.waiters
                }
                for waiter in waiting { waiter.resume(returning: outcome) }
            }
        }
    }
}

/// One test at a time on the cluster, in the order they asked. A test cancelled while it waits
/// (its time limit ran out) leaves the line and throws, instead of waiting on and then running
/// cancelled.
actor Turns {
    private var busy = false
    private var waiting: [(ticket: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    private var nextTicket: UInt64 = 0

    func take() async throws {
        try Task.checkCancellation()
        if !busy {
            busy = true
            return
        }
        let ticket = nextTicket
        nextTicket += 1
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { waiting.append((ticket, $0)) }
        } onCancel: {
            Task { await self.leave(ticket) }
        }
    }

    func give() {
        if waiting.isEmpty {
            busy = false
        } else {
            waiting.removeFirst().continuation.resume()
        }
    }

    private func leave(_ ticket: UInt64) {
        guard let index = waiting.firstIndex(where: { $0.ticket == ticket }) else { return }
        waiting.remove(at: index).continuation.resume(throwing: CancellationError())
    }
}
