import Foundation
import GRDB
import ListDiff
import ListPresenter
import ListTesting
import LiveListClient
import LiveListServer
import LiveListServerSQLite
import LiveListWire
import LiveQuery
import Logging
import ServiceLifecycle

/// `wire.*`: a `LiveListServer` on a loopback port and a client in the same process, over a real
/// WebSocket — from a commit on the server to the client's presenter having applied it, from
/// subscribing to the first screen, and a resume after commits missed offline.
public enum WireBenchmarks {
    static let sql = "SELECT id, name, flag, version FROM item WHERE flag = 1 ORDER BY name"

    /// Runs on the main thread (the presenter's); the server and the socket run on other threads.
    @MainActor
    public static func run(quick: Bool, filter: String?) throws -> [BenchResult] {
        func selected(_ name: String) -> Bool { filter.map { name.hasPrefix($0) } ?? true }
        let rows = quick ? 100_000 : 1_000_000
        let suffix = quick ? "100k" : "1m"
        let fanouts = quick ? [100] : [1_000, 3_000, 5_000, 10_000, 100_000]
        let fanoutNames = fanouts.map { "wire.fanout.\($0 >= 1_000 ? "\($0 / 1_000)k" : "\($0)")" }
        guard ["wire.update.", "wire.first_screen.", "wire.resume", "wire.memory.", "metrics.scrape"].contains(where: { selected($0 + suffix) || selected($0) })
            || fanoutNames.contains(where: selected) else { return [] }
        var results: [BenchResult] = []
        if selected("wire.memory.\(suffix)") {
            // First, in its own database and servers: no other live query's memory in the figures.
            let (setup, path) = try LiveQueryBenchmarks.makeDatabase(rows: rows, seed: UInt64(rows) &+ 7)
            try setup.close()
            results.append(try WireMemory.run(path: path, rows: rows, commits: quick ? 200 : 2_000, refetchSeconds: quick ? 5 : 20,
                                              processes: 2, name: "wire.memory.\(suffix)"))
            guard ["wire.update.", "wire.first_screen.", "wire.resume", "metrics.scrape"].contains(where: { selected($0 + suffix) || selected($0) })
                || fanoutNames.contains(where: selected) else { return results }
        }
        let (setup, path) = try LiveQueryBenchmarks.makeDatabase(rows: rows, seed: UInt64(rows) &+ 5)
        try setup.close()
        let pool = try DatabasePool(path: path)
        let served = try WireServer.start(pool)
        defer { served.stop() }
        if selected("wire.first_screen.\(suffix)") { results.append(try firstScreen(served, name: "wire.first_screen.\(suffix)", runs: quick ? 5 : 21)) }
        if selected("wire.update.\(suffix)") {
            results.append(try update(served, pool: pool, name: "wire.update.\(suffix)", rows: rows, runs: quick ? 21 : 201, baselineRuns: quick ? 3 : 5))
        }
        if selected("wire.resume") { results.append(try resume(served, pool: pool, rows: rows, commits: quick ? 100 : 1_000)) }
        if selected("metrics.scrape") { results.append(try metricsScrape(served, pool: pool, rows: rows, suffix: suffix, runs: quick ? 21 : 201)) }
        let descriptors = WireFanout.raiseDescriptorLimit()
        for (subscribers, name) in zip(fanouts, fanoutNames) where selected(name) {
            // Each process holds a descriptor per connection, and a loopback address pair has
            // only the ephemeral ports: past either, say where it stops instead of failing.
            if let stop = WireFanout.stop(subscribers: subscribers, descriptors: descriptors) {
                var result = BenchResult(name: name, medianMilliseconds: .nan, runs: 0)
                result.add("subscribers", .integer(Int64(subscribers)))
                result.add("stopped", .string(stop))
                results.append(result)
                continue
            }
            results.append(try WireFanout.run(served, pool: pool, rows: rows, subscribers: subscribers, seconds: quick ? 2 : 10))
        }
        return results
    }

    /// Subscribe → the first screen's rows applied by a presenter, on a fresh connection each run,
    /// the live query already open (another subscriber holds it); the cold open is reported too.
    @MainActor
    static func firstScreen(_ served: WireServer, name: String, runs: Int) throws -> BenchResult {
        let clock = ContinuousClock()
        let holder = try WireConnection(served.url)
        let coldStart = clock.now
        holder.subscribe(window: 0..<60)
        var holderModel = RemoteListModel()
        _ = try holderModel.receive(try holder.next())
        let cold = Stopwatch.milliseconds(coldStart.duration(to: clock.now))
        var times: [Double] = [], bytes: [Int] = [], deflated: [Int] = []
        for _ in 0..<runs {
            let start = clock.now
            let connection = try WireConnection(served.url)
            connection.subscribe(window: 0..<60)
            let frame = try connection.nextFrame()
            var model = RemoteListModel()
            guard case let .initial(state) = try model.receive(try ServerMessage.decode(Array(frame.utf8))) else {
                throw BenchFailure("\(name): the first message is not a reset")
            }
            let presenter = ListPresenter<RemoteSection, RemoteRow>()
            _ = EndToEndBenchmarks.attach(presenter)
            presenter.replace(with: state)
            times.append(Stopwatch.milliseconds(start.duration(to: clock.now)))
            bytes.append(frame.utf8.count)
            deflated.append(try DeflatedSize().bytes(of: frame))
            guard (0..<min(60, state.count)).allSatisfy({ model.record(for: state.row(at: $0)) != nil }) else {
                throw BenchFailure("\(name): the first screen lacks rows")
            }
            connection.close()
        }
        holder.close()
        var result = BenchResult(name: name, medianMilliseconds: LiveQueryBenchmarks.median(times), runs: runs)
        result.add("p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(times, 0.99))))
        result.add("bytes", .integer(Int64(bytes.sorted()[bytes.count / 2])))
        result.add("bytes_deflate", .integer(Int64(deflated.sorted()[deflated.count / 2])))
        result.add("cold_open_whole_index_ms", .double(BenchResult.rounded(cold)))
        result.add("window_rows", .integer(60))
        return result
    }

    /// One-row UPDATEs on the server that move a row: commit → live query → hub → socket → client
    /// model → presenter. Baseline: the server refetches (identity, version) in order and sends
    /// every identity as JSON; the client parses it and its presenter diffs (no socket: a floor of
    /// what that baseline costs over a wire).
    @MainActor
    static func update(_ served: WireServer, pool: DatabasePool, name: String, rows: Int, runs: Int, baselineRuns: Int) throws -> BenchResult {
        let connection = try WireConnection(served.url)
        connection.subscribe(window: 0..<60)
        var model = RemoteListModel()
        let presenter = ListPresenter<RemoteSection, RemoteRow>()
        _ = EndToEndBenchmarks.attach(presenter)
        guard case let .initial(first) = try model.receive(try connection.next()) else { throw BenchFailure("\(name): no reset") }
        presenter.replace(with: first)
        var random = SeededRandomNumberGenerator(seed: 29)
        let clock = ContinuousClock()
        var totals: [Double] = [], mains: [Double] = [], bytes: [Int] = [], deflated: [Int] = []
        // One connection's compressor, as permessage-deflate keeps it from message to message.
        let deflate = try DeflatedSize()
        for _ in 0..<runs {
            let update = ItemUpdate.random(rows: rows, &random)
            let start = clock.now
            try pool.write { db in try update.run(db) }
            let frame = try connection.nextFrame()
            let mainStart = clock.now
            guard case let .changes(changeset, _) = try model.receive(try ServerMessage.decode(Array(frame.utf8))) else {
                throw BenchFailure("\(name): a commit did not arrive as changes")
            }
            presenter.apply(changeset)
            let end = clock.now
            totals.append(Stopwatch.milliseconds(start.duration(to: end)))
            mains.append(Stopwatch.milliseconds(mainStart.duration(to: end)))
            bytes.append(frame.utf8.count)
            deflated.append(try deflate.bytes(of: frame))
        }
        let fresh = try pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE flag = 1") ?? 0 }
        guard model.state.count == fresh, presenter.statistics.fullDiffs == 0 else { throw BenchFailure("\(name): the client's count is not the SELECT's") }
        connection.close()

        let baselinePresenter = ListPresenter<SingleSection, VersionedItem<Int64, Int64>>()
        _ = EndToEndBenchmarks.attach(baselinePresenter)
        baselinePresenter.update(try waitFor { try await LiveQueryBenchmarks.fetchIdentities(pool) })
        var baseline: [Double] = [], baselineBytes = 0, baselineDeflated = 0
        let baselineDeflate = try DeflatedSize()
        for _ in 0..<baselineRuns {
            let update = ItemUpdate.random(rows: rows, &random)
            let start = clock.now
            try pool.write { db in try update.run(db) }
            let snapshot = try waitFor { try await LiveQueryBenchmarks.fetchIdentities(pool) }
            let sent = JSONValue.array(snapshot.sections[0].items.map { .array([.integer($0.id), .integer($0.version)]) }).serialized
            baselineBytes = sent.utf8.count
            baselineDeflated = try baselineDeflate.bytes(of: sent)
            guard case let .array(received) = try JSONParser.parse(Array(sent.utf8)) else { throw BenchFailure("\(name): baseline parse") }
            let items = received.map { element -> VersionedItem<Int64, Int64> in
                guard case let .array(pair) = element, case let .integer(id) = pair[0], case let .integer(version) = pair[1] else {
                    return VersionedItem(id: 0, version: 0)
                }
                return VersionedItem(id: id, version: version)
            }
            baselinePresenter.update(ListSnapshot(items: items))
            baseline.append(Stopwatch.milliseconds(start.duration(to: clock.now)))
        }
        var result = BenchResult(name: name, medianMilliseconds: LiveQueryBenchmarks.median(totals), runs: runs)
        result.baseline = "server refetch (identity, version) + all identities as JSON + client parse + diff + presenter.update (no socket)"
        result.baselineMedianMilliseconds = LiveQueryBenchmarks.median(baseline)
        result.add("p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(totals, 0.99))))
        result.add("main_median_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(mains))))
        result.add("bytes", .integer(Int64(bytes.sorted()[bytes.count / 2])))
        result.add("bytes_max", .integer(Int64(bytes.max() ?? 0)))
        result.add("bytes_deflate", .integer(Int64(deflated.sorted()[deflated.count / 2])))
        result.add("baseline_bytes", .integer(Int64(baselineBytes)))
        result.add("baseline_bytes_deflate", .integer(Int64(baselineDeflated)))
        result.add("rows", .integer(Int64(rows)))
        result.add("in_result", .integer(Int64(fresh)))
        return result
    }

    /// `GET /metrics` scraped every 50 ms (300 times Prometheus' usual 15 s) while `wire.update`
    /// runs, against the same run without scraping before and after it, in one process: each
    /// scrape's time and size, and what scraping costs the commit → client path (medians and p99;
    /// the ratio is the scraped median over the mean of the two quiet ones).
    @MainActor
    static func metricsScrape(_ served: WireServer, pool: DatabasePool, rows: Int, suffix: String, runs: Int) throws -> BenchResult {
        let name = "metrics.scrape"
        // Warm first (the first commits of a run pay for caches and pages), then quiet, scraped,
        // quiet again: the two quiet runs bracket the scraped one.
        _ = try update(served, pool: pool, name: "wire.update.\(suffix)", rows: rows, runs: max(11, runs / 4), baselineRuns: 1)
        let quiet = try update(served, pool: pool, name: "wire.update.\(suffix)", rows: rows, runs: runs, baselineRuns: 1)
        let scraper = try MetricsScraper(webSocketURL: served.url, interval: .milliseconds(50))
        let scraped = try update(served, pool: pool, name: "wire.update.\(suffix)", rows: rows, runs: runs, baselineRuns: 1)
        let scrapes = scraper.stop()
        let quietAfter = try update(served, pool: pool, name: "wire.update.\(suffix)", rows: rows, runs: runs, baselineRuns: 1)
        guard !scrapes.times.isEmpty else { throw BenchFailure("\(name): no scrape succeeded (\(scrapes.failures) failed)") }
        func p99(_ result: BenchResult) -> Double {
            guard let member = result.extra.first(where: { $0.key == "p99_ms" }), case let .double(value) = member.value else { return .nan }
            return value
        }
        var result = BenchResult(name: name, medianMilliseconds: LiveQueryBenchmarks.median(scrapes.times), runs: scrapes.times.count)
        result.add("p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(scrapes.times, 0.99))))
        result.add("bytes", .integer(Int64(scrapes.bytes)))
        result.add("failures", .integer(Int64(scrapes.failures)))
        result.add("update_median_ms", .double(BenchResult.rounded(quiet.medianMilliseconds)))
        result.add("update_median_scraped_ms", .double(BenchResult.rounded(scraped.medianMilliseconds)))
        result.add("update_p99_ms", .double(BenchResult.rounded(p99(quiet))))
        result.add("update_p99_scraped_ms", .double(BenchResult.rounded(p99(scraped))))
        result.add("update_median_after_ms", .double(BenchResult.rounded(quietAfter.medianMilliseconds)))
        result.add("update_p99_after_ms", .double(BenchResult.rounded(p99(quietAfter))))
        let quietMedian = (quiet.medianMilliseconds + quietAfter.medianMilliseconds) / 2
        result.add("update_median_ratio", .double(BenchResult.rounded(scraped.medianMilliseconds / quietMedian)))
        result.add("interval_ms", .integer(50))
        return result
    }

    /// A client holds version v, goes away; `commits` one-row commits land; it resubscribes with
    /// its version and receives one composed changeset: bytes and time, per distinct row changed.
    @MainActor
    static func resume(_ served: WireServer, pool: DatabasePool, rows: Int, commits: Int) throws -> BenchResult {
        // Another subscriber keeps the live query (and its buffer) open meanwhile.
        let holder = try WireConnection(served.url)
        holder.subscribe(window: 0..<60)
        var holderModel = RemoteListModel()
        _ = try holderModel.receive(try holder.next())
        let connection = try WireConnection(served.url)
        connection.subscribe(window: 0..<60)
        var model = RemoteListModel()
        _ = try model.receive(try connection.next())
        connection.close()
        var random = SeededRandomNumberGenerator(seed: 31)
        var changed = Set<Int64>()
        for _ in 0..<commits {
            let update = ItemUpdate.random(rows: rows, &random)
            changed.insert(update.id)
            try pool.write { db in try update.run(db) }
        }
        for _ in 0..<commits { _ = try holderModel.receive(try holder.next()) }
        let clock = ContinuousClock()
        let start = clock.now
        let again = try WireConnection(served.url)
        again.subscribe(window: 0..<60, resume: model.resume)
        let frame = try again.nextFrame()
        guard case .changes = try model.receive(try ServerMessage.decode(Array(frame.utf8))) else {
            throw BenchFailure("wire.resume: not one composed changeset")
        }
        let elapsed = Stopwatch.milliseconds(start.duration(to: clock.now))
        guard model.state.count == holderModel.state.count else { throw BenchFailure("wire.resume: the resumed count differs") }
        again.close()
        holder.close()
        var result = BenchResult(name: "wire.resume", medianMilliseconds: elapsed, runs: 1)
        result.add("commits", .integer(Int64(commits)))
        result.add("distinct_rows_changed", .integer(Int64(changed.count)))
        result.add("bytes", .integer(Int64(frame.utf8.count)))
        result.add("bytes_per_distinct_row", .double(BenchResult.rounded(Double(frame.utf8.count) / Double(max(1, changed.count)))))
        result.add("bytes_deflate", .integer(Int64(try DeflatedSize().bytes(of: frame))))
        return result
    }
}

/// The server of the `wire.*` benchmarks, on a free loopback port.
final class WireServer: Sendable {
    let url: String
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    private init(url: String, group: ServiceGroup, running: Task<Void, any Error>) {
        self.url = url
        self.group = group
        self.running = running
    }

    /// Serves the `items` query (and `queries`, `mutations`) over `pool` on a free loopback port.
    static func start(_ pool: DatabasePool, queries: [PublishedQuery] = [], mutations: [PublishedMutation] = []) throws -> WireServer {
        var logger = Logger(label: "bench.server")
        logger.logLevel = .warning
        // The whole index before the first reset, so that no "rest of the first fetch" update lands
        // among the timed commits (the figures are for a warm live query; the cold open is extra).
        let server = LiveListServer(database: pool, queries: [
            PublishedQuery(name: "items", sql: WireBenchmarks.sql, version: "version"),
        ] + queries, mutations: mutations, options: LiveQueryOptions(dataVersionPollInterval: nil, firstScreenRows: nil), logger: logger)
        let serverLogger = logger
        return try waitFor { try await start(server, logger: serverLogger) }
    }

    /// Serves `server` on a free loopback port.
    static func start(_ server: LiveListServer, logger: Logger) async throws -> WireServer {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = server.application(port: 0) { port in continuation.yield(port) }
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let running = Task.detached { try await group.run() }
        for await port in ports { return WireServer(url: "ws://127.0.0.1:\(port)/live", group: group, running: running) }
        throw BenchFailure("the wire server did not start")
    }

    func stop() {
        _ = try? waitFor { await self.shutDown() }
    }

    func shutDown() async {
        await group.triggerGracefulShutdown()
        _ = await running.result
    }
}

/// A client connection read synchronously by the benchmark's main thread.
final class WireConnection: Sendable {
    private let connection: RemoteConnection
    private let frames = Locked<[String]>([])
    /// Signalled once per frame appended: what `nextFrame()` waits for.
    private let arrived = DispatchSemaphore(value: 0)
    private let reader: Task<Void, Never>

    init(_ url: String) throws {
        let connection = try waitFor { try await WebSocketTransport().connect(to: url) }
        self.connection = connection
        let box = FrameSink()
        reader = Task.detached {
            do {
                for try await frame in connection.frames { box.deliver(frame) }
            } catch {}
            box.deliver(nil)
        }
        box.target = self
    }

    fileprivate func deliver(_ frame: String?) {
        frames.withLock { $0.append(frame ?? "") }
        arrived.signal()
    }

    func subscribe(window: Range<Int>, resume: WireResume? = nil) {
        connection.send(ClientMessage.subscribe(WireSubscription(sub: 1, query: "items", window: WireWindow(window), resume: resume)).encoded())
    }

    /// The next frame, waiting at most 30 s.
    func nextFrame() throws -> String {
        guard arrived.wait(timeout: .now() + 30) == .success else { throw BenchFailure("no frame from the wire server within 30 s") }
        let frame = frames.withLock { $0.removeFirst() }
        guard !frame.isEmpty else { throw BenchFailure("the wire connection closed") }
        return frame
    }

    func next() throws -> ServerMessage { try ServerMessage.decode(Array(try nextFrame().utf8)) }

    func close() {
        connection.close()
        reader.cancel()
    }
}

/// Hands frames to the connection once it exists: `target` is written once, before any frame
/// can arrive that needs it; frames that arrive first wait in `early`.
private final class FrameSink: Sendable {
    private struct State {
        var early: [String?] = []
        weak var stored: WireConnection?
    }

    private let state = Locked(State())
    var target: WireConnection? {
        get { state.withLock { $0.stored } }
        set {
            let pending = state.withLock { state -> [String?] in
                state.stored = newValue
                defer { state.early = [] }
                return state.early
            }
            for frame in pending { newValue?.deliver(frame) }
        }
    }

    func deliver(_ frame: String?) {
        let target = state.withLock { state -> WireConnection? in
            if state.stored == nil { state.early.append(frame) }
            return state.stored
        }
        target?.deliver(frame)
    }
}
