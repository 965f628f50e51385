import DroppingTransport
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

/// `wire.mutate.*`: published mutations from a `RemoteMutator` to a `LiveListServer` on a
/// loopback port, in the same process — from the call to the list showing the commit, and
/// exactly once through forced disconnects.
public enum MutationBenchmarks {
    static let rename = PublishedMutation(
        name: "rename", parameters: [QueryParameter("id", type: .integer), QueryParameter("name", type: .text)],
        statements: [.init("UPDATE item SET name = :name, version = version + 1 WHERE id = :id", mustChangeRows: true)])
    static let bump = PublishedMutation(
        name: "bump", parameters: [QueryParameter("k", type: .integer)],
        statements: [
            .init("UPDATE bench_tally SET value = (value * 31 + :k) % 1000000007"),
            .init("INSERT INTO bench_log (k) VALUES (:k)"),
        ])

    /// Runs on the main thread, which the client's main-actor work needs: it is pumped while
    /// the server and the sockets work on other threads.
    @MainActor
    public static func run(quick: Bool, filter: String?) throws -> [BenchResult] {
        func selected(_ name: String) -> Bool { filter.map { name.hasPrefix($0) } ?? true }
        let suffix = quick ? "100k" : "1m"
        var results: [BenchResult] = []
        if selected("wire.mutate.\(suffix)") {
            let rows = quick ? 100_000 : 1_000_000
            let (setup, path) = try LiveQueryBenchmarks.makeDatabase(rows: rows, seed: UInt64(rows) &+ 11)
            try setup.close()
            let pool = try DatabasePool(path: path)
            let served = try WireServer.start(pool, mutations: [rename])
            defer { served.stop() }
            results.append(try confirmed(served, pool: pool, name: "wire.mutate.\(suffix)", rows: rows, runs: quick ? 41 : 201))
        }
        if selected("wire.mutate.retry") {
            let (setup, path) = try LiveQueryBenchmarks.makeDatabase(rows: 1_000, seed: 13)
            try setup.write { db in
                try db.execute(sql: "CREATE TABLE bench_tally (value INTEGER NOT NULL)")
                try db.execute(sql: "INSERT INTO bench_tally VALUES (0)")
                try db.execute(sql: "CREATE TABLE bench_log (id INTEGER PRIMARY KEY, k INTEGER NOT NULL)")
            }
            try setup.close()
            let pool = try DatabasePool(path: path)
            let served = try WireServer.start(pool, mutations: [bump])
            defer { served.stop() }
            results.append(try retry(served, pool: pool, mutations: quick ? 200 : 1_000, disconnects: quick ? 5 : 20))
        }
        return results
    }

    /// A list of the 1M-row query on screen (a presenter fed by a `RemoteLiveQuery`), and a
    /// mutation that renames one of its visible rows (so that it moves): from the call to the
    /// changeset with the server's row applied by the presenter on the main actor, and to the
    /// call's return (`mutated`, on the mutator's own connection).
    @MainActor
    static func confirmed(_ served: WireServer, pool: DatabasePool, name: String, rows: Int, runs: Int) throws -> BenchResult {
        let list = RemoteLiveQuery(url: served.url, query: "items", window: 0..<60, prefetch: 0)
        let presenter = ListPresenter<RemoteSection, RemoteRow>()
        let cells = ListCellSource(presenter: presenter, records: list.records, prefetch: 0)
        _ = EndToEndBenchmarks.attach(presenter)
        let clock = ContinuousClock()
        let seen = Seen()
        list.onEvent = { event in
            cells.receive(event)
            if case .changes = event { seen.at = clock.now }
        }
        list.start()
        let mutator = RemoteMutator(url: served.url, client: "bench")
        defer {
            list.stop()
            mutator.stop()
        }
        try pump(seconds: 30, "the first screen") { list.model.state.count > 0 && list.model.record(for: list.model.state.row(at: 0)) != nil }
        var random = SeededRandomNumberGenerator(seed: 37)
        var applied: [Double] = [], answered: [Double] = []
        // The first run opens the mutator's connection: not timed.
        for run in -1..<runs {
            // A row on screen, renamed at random: it moves, most often out of the window.
            let position = Int.random(in: 0..<min(60, list.model.state.count), using: &random)
            guard let id = list.model.record(for: list.model.state.row(at: position))?.id else {
                throw BenchFailure("\(name): row \(position) is not loaded")
            }
            let newName = String(format: "n%08d-%d", Int.random(in: 0..<100_000_000, using: &random), run + 1)
            seen.at = nil
            let start = clock.now
            let call = Answer<WireMutated>()
            Task { @MainActor in
                do { call.result = .success(try await mutator.mutate("rename", arguments: ["id": id, "name": .text(newName)])) } catch { call.result = .failure(error) }
                call.at = clock.now
            }
            try pump(seconds: 10, "\(name): the mutation's commit") { seen.at != nil && call.result != nil }
            _ = try call.result?.get()
            guard let shown = seen.at, let returned = call.at else { throw BenchFailure("\(name): no answer") }
            guard run >= 0 else { continue }
            applied.append(Stopwatch.milliseconds(start.duration(to: shown)))
            answered.append(Stopwatch.milliseconds(start.duration(to: returned)))
        }
        let fresh = try pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE flag = 1") ?? 0 }
        try pump(seconds: 10, "\(name): the list catches up") { list.model.state.count == fresh }
        var result = BenchResult(name: name, medianMilliseconds: LiveQueryBenchmarks.median(applied), runs: runs)
        let p99 = LiveQueryBenchmarks.percentile(applied, 0.99)
        result.add("p99_ms", .double(BenchResult.rounded(p99)))
        result.add("mutated_median_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(answered))))
        result.add("mutated_p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(answered, 0.99))))
        result.add("rows", .integer(Int64(rows)))
        result.add("in_result", .integer(Int64(fresh)))
        result.add("setup", .string("RemoteMutator → LiveListServer (SQLite) → the list's RemoteLiveQuery → ListPresenter, loopback, one process"))
        let met = LiveQueryBenchmarks.median(applied) <= 5 && p99 <= 20
        result.add("budget_met", .bool(met))
        result.notes.append("budget (confirmed row applied: median ≤ 5 ms, p99 ≤ 20 ms): " + (met ? "met" : "missed"))
        result.notes.append("pending rows (pending_ms) are not built yet: the list shows the row once the server sends it")
        return result
    }

    /// `mutations` mutations sent as fast as they are answered (up to 50 in flight), each
    /// order- and repeat-sensitive, while every connection is cut `disconnects` times: how many
    /// the database applied, twice, or not at all, and whether in the client's order.
    @MainActor
    static func retry(_ served: WireServer, pool: DatabasePool, mutations: Int, disconnects: Int) throws -> BenchResult {
        let transport = DroppingTransport()
        let mutator = RemoteMutator(url: served.url, client: "bench-retry", transport: transport)
        defer { mutator.stop() }
        let clock = ContinuousClock()
        let start = clock.now
        var random = SeededRandomNumberGenerator(seed: 43)
        let values = (0..<mutations).map { _ in Int64(Int.random(in: 0..<1_000_000, using: &random)) }
        let answers = Answers()
        var sent = 0, cuts = 0, cutsMade = 0
        while answers.count < mutations {
            while sent < mutations, sent - answers.count < 50 {
                let k = values[sent]
                sent += 1
                Task { @MainActor in
                    do {
                        let mutated = try await mutator.mutate("bump", arguments: ["k": .integer(k)])
                        answers.add(id: mutated.id, k: k, duplicate: mutated.duplicate)
                    } catch {
                        answers.fail(error)
                    }
                }
            }
            // A cut after every mutations / (disconnects + 1) answers.
            if cuts < disconnects, answers.count >= (cuts + 1) * mutations / (disconnects + 1) {
                cuts += 1
                cutsMade += transport.drop()
            }
            _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.005))
            if let error = answers.error { throw BenchFailure("wire.mutate.retry: \(error)") }
            if start.duration(to: clock.now) > .seconds(120) { throw BenchFailure("wire.mutate.retry: \(answers.count) of \(mutations) answered in 120 s") }
        }
        let elapsed = Stopwatch.milliseconds(start.duration(to: clock.now))
        let (logged, tally) = try pool.read { db in
            (try Int64.fetchAll(db, sql: "SELECT k FROM bench_log ORDER BY id"), try Int64.fetchOne(db, sql: "SELECT value FROM bench_tally") ?? -1)
        }
        // The client's order: by the numbers the calls got.
        let order = answers.byID.sorted { $0.key < $1.key }.map(\.value)
        var expected: Int64 = 0
        for k in order { expected = (expected * 31 + k) % 1_000_000_007 }
        var counts: [Int64: Int] = [:]
        for k in logged { counts[k, default: 0] += 1 }
        var wanted: [Int64: Int] = [:]
        for k in values { wanted[k, default: 0] += 1 }
        let duplicates = counts.reduce(0) { $0 + max(0, $1.value - (wanted[$1.key] ?? 0)) }
        let lost = wanted.reduce(0) { $0 + max(0, $1.value - (counts[$1.key] ?? 0)) }
        var result = BenchResult(name: "wire.mutate.retry", medianMilliseconds: elapsed / Double(mutations), runs: mutations)
        result.add("applied", .integer(Int64(logged.count)))
        result.add("duplicates", .integer(Int64(duplicates)))
        result.add("lost", .integer(Int64(lost)))
        result.add("in_client_order", .bool(logged == order && tally == expected))
        result.add("disconnects", .integer(Int64(cuts)))
        result.add("connections_cut", .integer(Int64(cutsMade)))
        result.add("answered_as_sent_again", .integer(Int64(answers.duplicates)))
        result.add("seconds", .double(BenchResult.rounded(elapsed / 1_000)))
        result.add("setup", .string("one RemoteMutator, up to 50 mutations in flight, every connection cut \(disconnects) times; median_ms: wall time per mutation"))
        let met = duplicates == 0 && lost == 0 && logged == order
        result.add("budget_met", .bool(met))
        result.notes.append("budget (duplicates 0, lost 0, in order): " + (met ? "met" : "missed"))
        return result
    }

    /// Runs the main run loop (the client's main-actor work) until `done`, for at most `seconds`.
    @MainActor
    static func pump(seconds: Double, _ what: String, until done: () -> Bool) throws {
        let end = Date(timeIntervalSinceNow: seconds)
        while !done() {
            guard Date() < end else { throw BenchFailure("\(what): not within \(seconds) s") }
            _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.005))
        }
    }

    @MainActor
    final class Seen {
        var at: ContinuousClock.Instant?
    }

    @MainActor
    final class Answer<T> {
        var result: Result<T, any Error>?
        var at: ContinuousClock.Instant?
    }

    @MainActor
    final class Answers {
        var byID: [Int64: Int64] = [:]
        var duplicates = 0
        var error: (any Error)?
        var count: Int { byID.count }

        func add(id: Int64, k: Int64, duplicate: Bool) {
            byID[id] = k
            if duplicate { duplicates += 1 }
        }

        func fail(_ error: any Error) { self.error = error }
    }
}
