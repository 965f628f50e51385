import Foundation
import ListDiff
import GRDB
import HummingbirdWSClient
import ListTesting
import LiveListClient
import LiveListWire
import Logging
import NIOCore
import NIOPosix

/// `wire.fanout.N`: N subscribers of one query, in a load-generator process of their own, while
/// the server commits 16 one-row changes a second for 10 s. Commit → received latency (the
/// server's commit time against each client's receipt, one machine, one wall clock), the server
/// process's CPU per commit, bytes per commit per client, resident memory per subscriber, and
/// `lost`: changesets received out of order (a gap the protocol forbids). A client that reads too
/// slowly gets a reset instead of the changes it missed (`resets`). At the end every client must
/// reach the last version, and one client that applies every message to a model must equal the
/// SELECT — every client's list is then the SELECT's, or the benchmark fails.
public enum WireFanout {
    static let commitsPerSecond = 16
    static let subscribeText = ClientMessage.subscribe(WireSubscription(sub: 1, query: "items", window: WireWindow(start: 0, count: 60))).encoded()

    @MainActor
    static func run(_ served: WireServer, pool: DatabasePool, rows: Int, subscribers: Int, seconds: Int) throws -> BenchResult {
        let name = "wire.fanout.\(subscribers >= 1_000 ? "\(subscribers / 1_000)k" : "\(subscribers)")"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-fanout-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let commitsFile = directory.appendingPathComponent("commits.txt")
        // The live query open before, so that the memory measured is the subscribers'.
        let holder = try WireConnection(served.url)
        holder.subscribe(window: 0..<60)
        guard case let .reset(first) = try holder.next() else { throw BenchFailure("\(name): no reset") }
        defer { holder.close() }
        // Commit k (from 1) leads to this sequence + k.
        let base = first.version.sequence
        let residentBefore = LiveQueryBenchmarks.residentBytes()
        let (process, input, lines) = try startLoadGenerator(subscribers: subscribers, commitsFile: commitsFile, urls: [served.url], name: name)
        let residentAfter = LiveQueryBenchmarks.residentBytes()
        // Scraped once a second meanwhile: what a scrape costs with this many subscriptions.
        let scraper = try MetricsScraper(webSocketURL: served.url, interval: .seconds(1))
        var random = SeededRandomNumberGenerator(seed: 41)
        var commitTimes: [Double] = []
        let cpuBefore = Self.cpuSeconds()
        let interval = 1.0 / Double(commitsPerSecond)
        let start = Date().timeIntervalSince1970
        for index in 0..<(commitsPerSecond * seconds) {
            let due = start + Double(index) * interval
            let wait = due - Date().timeIntervalSince1970
            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            let update = ItemUpdate.random(rows: rows, &random)
            commitTimes.append(Date().timeIntervalSince1970)
            try pool.write { db in try update.run(db) }
        }
        Thread.sleep(forTimeInterval: 1)
        let cpu = Self.cpuSeconds() - cpuBefore
        let scrapes = scraper.stop()
        try ([String(base)] + commitTimes.map { String($0) }).joined(separator: "\n").write(to: commitsFile, atomically: true, encoding: .utf8)
        let fresh = try pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE flag = 1") ?? 0 }
        let firstRows = try pool.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM item WHERE flag = 1 ORDER BY name LIMIT 60") }
        try input.fileHandleForWriting.write(contentsOf: Data("\(fresh) \(firstRows.map(String.init).joined(separator: ","))\n".utf8))
        try input.fileHandleForWriting.close()
        guard let report = lines.next(), let object = try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any] else {
            throw BenchFailure("\(name): the load generator did not report")
        }
        process.waitUntilExit()
        let figures = object.compactMapValues { ($0 as? NSNumber)?.doubleValue }
        guard object["equal"] as? Bool == true else { throw BenchFailure("\(name): a client's list differs from the SELECT: \(report)") }
        var result = BenchResult(name: name, medianMilliseconds: figures["p50_ms"] ?? .nan, runs: commitTimes.count)
        result.add("p99_ms", .double(BenchResult.rounded(figures["p99_ms"] ?? .nan)))
        result.add("max_ms", .double(BenchResult.rounded(figures["max_ms"] ?? .nan)))
        result.add("subscribers", .integer(Int64(subscribers)))
        result.add("commits", .integer(Int64(commitTimes.count)))
        result.add("lost", .integer(Int64(figures["lost"] ?? -1)))
        result.add("resets", .integer(Int64(figures["resets"] ?? -1)))
        result.add("received_share", .double(BenchResult.rounded(figures["received_share"] ?? .nan)))
        result.add("catch_up_ms", .double(BenchResult.rounded(figures["catch_up_ms"] ?? .nan)))
        result.add("bytes", .double(BenchResult.rounded(figures["bytes_per_commit_per_client"] ?? .nan)))
        result.add("server_cpu_ms_per_commit", .double(BenchResult.rounded(cpu * 1_000 / Double(commitTimes.count))))
        result.add("server_resident_bytes_per_subscriber", .integer(Int64(max(0, residentAfter - residentBefore) / subscribers)))
        result.add("scrape_median_ms", .double(BenchResult.rounded(scrapes.times.isEmpty ? .nan : LiveQueryBenchmarks.median(scrapes.times))))
        result.add("scrape_max_ms", .double(BenchResult.rounded(scrapes.times.max() ?? .nan)))
        result.add("scrapes", .integer(Int64(scrapes.times.count)))
        result.add("load_generator_cpu_ms_per_commit", .double(BenchResult.rounded(figures["cpu_ms_per_commit"] ?? .nan)))
        result.add("load_generator", .string("its own process, bare NIO connections on \(System.coreCount) event loops; every frame timed at receipt, one Swift client applying every message"))
        return result
    }

    /// The load generator, in a process of its own: subscribes `subscribers` connections (shared
    /// among `urls`), says "ready", and reports when its input closes.
    static func startLoadGenerator(subscribers: Int, commitsFile: URL, urls: [String], name: String) throws -> (Process, Pipe, LineReader) {
        try LoadGeneratorProcess.start(["--child", "fanout:\(subscribers):\(commitsFile.path)", "--child-database", urls.joined(separator: " ")], name: name)
    }

    /// Raises this process's descriptor limit to its hard limit (children inherit it); returns
    /// the limit now in force.
    static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1_024 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 { _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) }
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// Why `subscribers` connections cannot be made here (`nil`: they can): the descriptors of one
    /// process, or the loopback ports of one address pair.
    static func stop(subscribers: Int, descriptors: Int) -> String? {
        let needed = subscribers + 1_024
        if needed > descriptors {
            return "needs about \(needed) descriptors in the server and in the load generator; RLIMIT_NOFILE's hard limit here is \(descriptors) (raising it needs CAP_SYS_RESOURCE)"
        }
        let ports = ephemeralPorts()
        if subscribers > ports {
            return "needs \(subscribers) connections from one loopback address to one port; the ephemeral range here has \(ports) ports"
        }
        return nil
    }

    private static func ephemeralPorts() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8) else { return 28_232 }
        let bounds = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) }
        return bounds.count == 2 ? bounds[1] - bounds[0] + 1 : 28_232
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// In the load generator: `subscribers` connections to `urls` (space-separated; the
    /// subscribers shared among them); prints "ready", then, when its input gives the SELECT's
    /// count and first ids, one JSON line of figures.
    public static func child(url urls: String, subscribers: Int, commitsFile: String) throws -> String {
        let servers = urls.split(separator: " ").map(String.init)
        guard let url = servers.first else { throw BenchFailure("fan-out: no server") }
        let clients = (0..<subscribers).map { _ in FanoutRecorder() }
        let checker = FanoutRecorder()
        let checkerTask = Task.detached { await FanoutChecker.run(url: url, recorder: checker) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        defer { try? group.syncShutdownGracefully() }
        var channels: [any Channel] = []
        for (index, server) in servers.enumerated() {
            let share = Array(clients[(subscribers * index / servers.count)..<(subscribers * (index + 1) / servers.count)])
            channels += try FanoutConnections.open(url: server, subscribe: Array(subscribeText.utf8), recorders: share, group: group)
        }
        let deadline = Date().addingTimeInterval(120)
        while (clients + [checker]).contains(where: { !$0.isSubscribed }) {
            guard Date() < deadline else { throw BenchFailure("fan-out: subscriptions did not all open within 120 s") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let cpuBefore = cpuSeconds()
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        guard let line = readLine() else { throw BenchFailure("fan-out: no SELECT from the parent") }
        let cpu = cpuSeconds() - cpuBefore
        let parts = line.split(separator: " ")
        let count = parts.first.flatMap { Int($0) } ?? -1
        let firstIDs = parts.count > 1 ? parts[1].split(separator: ",").compactMap { Int64($0) } : []
        // Every client catches up with the one that applies every message (or the run fails).
        let signalled = Date()
        let catchUpDeadline = signalled.addingTimeInterval(60)
        while clients.contains(where: { $0.state.version != checker.state.version }) || checker.state.count != count {
            if Date() > catchUpDeadline { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        let catchUp = Date().timeIntervalSince(signalled) * 1_000
        checkerTask.cancel()
        for channel in channels { channel.close(promise: nil) }
        let commits = try FanoutCommits(file: commitsFile)
        var latencies: [Double] = []
        latencies.reserveCapacity(subscribers * commits.times.count)
        var lost = 0, bytes = 0, frames = 0, resets = 0
        let reference = checker.state
        var equal = reference.count == count && reference.firstIDs == firstIDs
        for client in clients {
            let state = client.state
            lost += state.lost
            resets += state.resets
            bytes += state.bytes
            frames += state.received.count
            if state.version != reference.version { equal = false }
            for (sequence, time) in state.received {
                if let index = commits.commit(of: sequence) { latencies.append((time - commits.times[index]) * 1_000) }
            }
        }
        // -1: no changeset arrived at all (0 would read as a fast one).
        func percentile(_ p: Double) -> Double { latencies.isEmpty ? -1 : LiveQueryBenchmarks.percentile(latencies, p) }
        let figures: [String: Any] = [
            "p50_ms": percentile(0.5), "p99_ms": percentile(0.99), "max_ms": latencies.max() ?? -1, "lost": lost, "equal": equal,
            "bytes_per_commit_per_client": Double(bytes) / Double(max(1, frames)), "resets": resets,
            "received_share": Double(frames) / Double(max(1, subscribers * commits.times.count)), "catch_up_ms": catchUp,
            "cpu_ms_per_commit": cpu * 1_000 / Double(max(1, commits.times.count)),
        ]
        let data = try JSONSerialization.data(withJSONObject: figures)
        return String(decoding: data, as: UTF8.self)
    }
}

/// When the parent committed, and which versions lead to which commit. Counted versions: the file's
/// first line is the version before the first commit, then each commit's time. Commit positions
/// (first line `positions`): each commit's time and the WAL position just after it; a version
/// leads to the first commit whose position is at or past it.
struct FanoutCommits {
    let times: [Double]
    private let base: Int
    private let positions: [Int]?

    init(file: String) throws {
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        let pairs = lines.dropFirst().map { $0.split(separator: " ") }
        times = pairs.compactMap { $0.first.flatMap { Double($0) } }
        if lines.first == "positions" {
            base = 0
            positions = pairs.compactMap { $0.count > 1 ? Int($0[1]) : nil }
        } else {
            base = lines.first.flatMap { Int($0) } ?? 0
            positions = nil
        }
    }

    /// The index of the commit `sequence` (a version's number) leads to.
    func commit(of sequence: Int) -> Int? {
        guard let positions else { return sequence > base && sequence <= base + times.count ? sequence - base - 1 : nil }
        var (low, high) = (0, positions.count)
        while low < high {
            let middle = (low + high) / 2
            if positions[middle] < sequence { low = middle + 1 } else { high = middle }
        }
        return low < positions.count && (low == 0 || positions[low - 1] < sequence) ? low : nil
    }
}

/// What one subscriber of the load generator saw: each version's receipt time, the order, the
/// resets, the bytes; the checker's also the count and first rows of the list it applied.
/// A connection's event loop or task writes `current`; the generator's thread reads it.
final class FanoutRecorder: Sendable {
    struct State {
        var subscribed = false
        /// The version the client holds, as its bytes in the messages.
        var versionBytes: [UInt8] = []
        var received: [(Int, Double)] = []
        var lost = 0
        var bytes = 0
        var resets = 0
        var count = -1
        var firstIDs: [Int64] = []

        var version: String { String(decoding: versionBytes, as: UTF8.self) }
    }

    private let current = Locked(State())

    var isSubscribed: Bool { current.withLock { $0.subscribed } }
    var state: State { current.withLock { $0 } }

    /// Notes a message: its version (read from its bytes in place, as a load generator must stay
    /// cheap), its order and its bytes.
    func note(_ utf8: [UInt8], at time: Double) {
        let from = FrameScan.field(Self.fromField, in: utf8), to = FrameScan.field(Self.toField, in: utf8)
        let version = from == nil ? FrameScan.field(Self.versionField, in: utf8) : nil
        let isReset = version != nil && FrameScan.find(Self.resetType, in: utf8) != nil
        current.withLock { current in
            if let version, isReset {
                if current.subscribed { current.resets += 1 }
                current.subscribed = true
                current.versionBytes = Array(utf8[version])
            } else if let from, let to {
                if !utf8[from].elementsEqual(current.versionBytes) { current.lost += 1 }
                current.versionBytes = Array(utf8[to])
                if let sequence = Self.sequence(utf8[to]) { current.received.append((sequence, time)) }
                current.bytes += utf8.count
            }
        }
    }

    /// The number after a version's last colon.
    private static func sequence(_ version: ArraySlice<UInt8>) -> Int? {
        guard let colon = version.lastIndex(of: UInt8(ascii: ":")) else { return nil }
        var value = 0
        for byte in version[(colon + 1)...] {
            guard byte >= 48, byte <= 57 else { return nil }
            value = value * 10 + Int(byte - 48)
        }
        return value
    }

    /// The checker's list after a message.
    func noteList(count: Int, firstIDs: [Int64]) {
        current.withLock { current in
            current.count = count
            current.firstIDs = firstIDs
        }
    }

    private static let fromField = Array("\"from\":\"".utf8)
    private static let toField = Array("\"to\":\"".utf8)
    private static let versionField = Array("\"version\":\"".utf8)
    private static let resetType = Array("\"type\":\"reset\"".utf8)

}

/// The load generator's checker: a full Swift client that applies every message to a model.
enum FanoutChecker {
    static func run(url: String, recorder: FanoutRecorder) async {
        var logger = Logger(label: "fanout")
        logger.logLevel = .critical
        _ = try? await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 20), logger: logger) { inbound, outbound, _ in
            var model = RemoteListModel()
            try await outbound.write(.text(WireFanout.subscribeText))
            for try await message in inbound.messages(maxSize: 1 << 24) {
                guard case let .text(text) = message else { continue }
                let utf8 = Array(text.utf8)
                recorder.note(utf8, at: Date().timeIntervalSince1970)
                if let decoded = try? ServerMessage.decode(utf8), (try? model.receive(decoded)) != nil {
                    let state = model.state
                    let ids = (0..<min(60, state.count)).compactMap { position -> Int64? in
                        if case let .row(.integer(id)) = state.row(at: position).id { return id }
                        return nil
                    }
                    recorder.noteList(count: state.count, firstIDs: ids)
                }
            }
        }
    }
}

/// Lines of a child's output, read as they come.
final class LineReader {
    private let handle: FileHandle
    private var buffer: [UInt8] = []

    init(_ handle: FileHandle) { self.handle = handle }

    func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let data = handle.availableData
            if data.isEmpty { return nil }
            buffer += data
        }
    }
}
