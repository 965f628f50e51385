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
            // The items without their version on the wire: a rename's pending row can be derived
            // (its new version is an expression the client cannot know, and does not show).
            let shown = PublishedQuery(name: "shownItems", sql: "SELECT id, name, flag FROM item WHERE flag = 1 ORDER BY name", version: "version")
            let served = try WireServer.start(pool, queries: [shown], mutations: [rename])
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
        if selected("wire.mutate.fairness") {
            let rows = 10_000
            let (setup, path) = try LiveQueryBenchmarks.makeDatabase(rows: rows, seed: 61)
            try setup.close()
            let pool = try DatabasePool(path: path)
            let served = try WireServer.start(pool, mutations: [rename])
            defer { served.stop() }
            let figures = try waitFor { try await MutationFairness.measure(url: served.url, rows: rows, runs: quick ? 200 : 800) }
            results.append(MutationFairness.result(figures, name: "wire.mutate.fairness", setup:
                "LiveListServer (SQLite, \(rows) rows), loopback, one process: a bystander subscribed to `items` renames a row at a time; a flooder keeps 256 renames waiting"))
        }
        return results
    }

    /// A list of the 1M-row query on screen (a presenter fed by a `RemoteLiveQuery`), and a
    /// mutation that renames one of its visible rows so that it moves within the screen, with
    /// the rename as its expected effect: from the call to the pending row applied by the
    /// presenter (`pending_ms`), to the changeset with the server's row applied (the median),
    /// and to the call's return (`mutated`; the list and the mutator share one connection, so the
    /// answer says the list holds the commit).
    @MainActor
    static func confirmed(_ served: WireServer, pool: DatabasePool, name: String, rows: Int, runs: Int) throws -> BenchResult {
        let session = RemoteSession(url: served.url)
        let list = RemoteLiveQuery(session: session, query: "shownItems", window: 0..<60, prefetch: 0)
        let presenter = ListPresenter<RemoteSection, RemoteRow>()
        let cells = ListCellSource(presenter: presenter, records: list.records, prefetch: 0)
        _ = EndToEndBenchmarks.attach(presenter)
        let clock = ContinuousClock()
        let seen = Seen()
        watch(list, cells: cells, clock: clock, seen: seen)
        list.start()
        let mutator = RemoteMutator(session: session, client: "bench")
        // The arrangement before one connection per client: a mutator on a connection of its own,
        // whose calls wait for the list's `sync`.
        let ownMutator = RemoteMutator(url: served.url, client: "bench-own")
        ownMutator.start()
        defer {
            list.stop()
            mutator.stop()
            ownMutator.stop()
        }
        try pump(seconds: 30, "the first screen") { list.model.state.count > 0 && list.model.record(for: list.model.state.row(at: 0)) != nil }
        var random = SeededRandomNumberGenerator(seed: 37)
        var figures = Confirmed()
        // The first run opens the mutator's connection: not timed.
        // Runs alternate with the same mutation given no expected effect (the baseline: the row
        // moves when the server's changeset comes), from a mutator on its own connection, and
        // with the effect derived from the server's statement of it.
        for run in -2..<(4 * runs) {
            let plain = run >= 0 && run % 4 == 1
            let own = run == -2 || (run >= 0 && run % 4 == 2)
            let derived = run >= 0 && run % 4 == 3
            mutator.derivesPendingEffects = derived
            // A row on screen renamed to sort right after another row on screen: it moves there.
            // (The screen follows its top row, so the window moves now and then: pick among the
            // rows it holds.)
            try pump(seconds: 10, "\(name): the window's rows") { list.model.requestedWindow == nil }
            let (id, after, moves) = try pick(in: list, &random, name: name)
            let newName = after + String(format: "-%d", run + 2)
            seen.at = nil
            seen.first = nil
            seen.changesets = 0
            let start = clock.now
            let call = Answer<WireMutated>()
            Task { @MainActor in
                do {
                    let effects = plain || derived ? [] : [PendingEffect(list, [.update(id: id, values: ["name": .text(newName)])])]
                    call.result = .success(try await (own ? ownMutator : mutator).mutate("rename", arguments: ["id": id, "name": .text(newName)],
                                                                    showingIn: [list], expecting: effects))
                } catch {
                    call.result = .failure(error)
                }
                call.at = clock.now
            }
            try pump(seconds: 10, "\(name): the mutation's commit") { seen.at != nil && call.result != nil }
            _ = try call.result?.get()
            guard let shown = seen.at, let first = seen.first, let firstMain = seen.firstMain, let returned = call.at else {
                throw BenchFailure("\(name): no answer")
            }
            guard run >= 0 else { continue }
            let times = (shown: Stopwatch.milliseconds(start.duration(to: shown)), returned: Stopwatch.milliseconds(start.duration(to: returned)),
                         pending: Stopwatch.milliseconds(start.duration(to: first)), pendingMain: Stopwatch.milliseconds(firstMain))
            if derived {
                figures.derivedPending.append(times.pending)
                figures.derivedApplied.append(times.shown)
                figures.derivedChangesets.append(seen.changesets)
            } else {
                figures.record(times, own: own, plain: plain, moved: moves)
            }
        }
        let fresh = try pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE flag = 1") ?? 0 }
        try pump(seconds: 10, "\(name): the list catches up") { list.model.state.count == fresh }
        return result(figures, name: name, runs: runs, rows: rows, inResult: fresh)
    }

    /// Hands `list`'s events to `cells`, noting in `seen` when each changeset was applied.
    @MainActor
    static func watch(_ list: RemoteLiveQuery, cells: ListCellSource<RemoteSection, RemoteRow, RemoteRecord>, clock: ContinuousClock, seen: Seen) {
        list.onEvent = { event in
            let start = clock.now
            cells.receive(event)
            guard case .changes = event else { return }
            seen.at = clock.now
            seen.changesets += 1
            if seen.first == nil {
                seen.first = seen.at
                seen.firstMain = start.duration(to: clock.now)
            }
        }
    }

    /// A row of the window the list holds with its values, and the name of another one: renamed
    /// after it, the row moves there (`moves`: they are not the same row).
    @MainActor
    static func pick(in list: RemoteLiveQuery, _ random: inout SeededRandomNumberGenerator, name: String) throws -> (WireValue, String, Bool) {
        let state = list.model.state
        let held = list.model.window.clamped(to: 0..<state.count).filter { list.model.record(for: state.row(at: $0)) != nil }
        guard held.count >= 2, let position = held.randomElement(using: &random), let next = held.randomElement(using: &random),
              let record = list.model.record(for: state.row(at: position)),
              case let .text(after)? = list.model.record(for: state.row(at: next))?["name"] else {
            throw BenchFailure("\(name): the window \(list.model.window) holds \(held.count) rows with their values")
        }
        return (record.id, after, position != next)
    }

    /// What `wire.mutate.*` measured, in milliseconds.
    struct Confirmed {
        var applied: [Double] = [], answered: [Double] = [], pending: [Double] = [], pendingMain: [Double] = []
        var plainApplied: [Double] = [], plainAnswered: [Double] = [], ownAnswered: [Double] = []
        /// Runs whose pending row was derived from the server's statement of the mutation.
        var derivedPending: [Double] = [], derivedApplied: [Double] = [], derivedChangesets: [Int] = []
        var moved = 0

        /// One run's times, by kind: from a mutator on its own connection, with no expected
        /// effect, or with one on the list's connection.
        mutating func record(_ times: (shown: Double, returned: Double, pending: Double, pendingMain: Double), own: Bool, plain: Bool, moved: Bool) {
            if own {
                ownAnswered.append(times.returned)
            } else if plain {
                plainApplied.append(times.shown)
                plainAnswered.append(times.returned)
            } else {
                if moved { self.moved += 1 }
                applied.append(times.shown)
                answered.append(times.returned)
                pending.append(times.pending)
                pendingMain.append(times.pendingMain)
            }
        }
    }

    /// The benchmark's line.
    static func result(_ figures: Confirmed, name: String, runs: Int, rows: Int, inResult fresh: Int) -> BenchResult {
        let applied = figures.applied, answered = figures.answered, pending = figures.pending, pendingMain = figures.pendingMain
        let plainApplied = figures.plainApplied, plainAnswered = figures.plainAnswered, ownAnswered = figures.ownAnswered
        var result = BenchResult(name: name, medianMilliseconds: LiveQueryBenchmarks.median(applied), runs: runs)
        let p99 = LiveQueryBenchmarks.percentile(applied, 0.99)
        result.add("p99_ms", .double(BenchResult.rounded(p99)))
        result.add("mutated_median_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(answered))))
        result.add("mutated_p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(answered, 0.99))))
        result.add("baseline_median_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(plainApplied))))
        result.add("baseline_p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(plainApplied, 0.99))))
        result.add("baseline_mutated_median_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(plainAnswered))))
        result.add("own_connection_mutated_median_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(ownAnswered))))
        result.add("own_connection_mutated_p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(ownAnswered, 0.99))))
        result.add("pending_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(pending))))
        result.add("pending_p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(pending, 0.99))))
        result.add("pending_main_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(pendingMain))))
        result.add("derived_pending_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(figures.derivedPending))))
        result.add("derived_pending_p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(figures.derivedPending, 0.99))))
        result.add("derived_applied_median_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.median(figures.derivedApplied))))
        let derivedChangesets = figures.derivedChangesets.max() ?? 0
        result.add("derived_changesets_max", .integer(Int64(derivedChangesets)))
        result.add("moved_within_screen", .integer(Int64(figures.moved)))
        result.add("rows", .integer(Int64(rows)))
        result.add("in_result", .integer(Int64(fresh)))
        result.add("setup", .string("RemoteMutator → LiveListServer (SQLite) → the list's RemoteLiveQuery → ListPresenter, loopback, one process"))
        let met = LiveQueryBenchmarks.median(applied) <= 5 && p99 <= 20 && LiveQueryBenchmarks.median(pending) <= 1
            && LiveQueryBenchmarks.median(figures.derivedPending) <= 1 && derivedChangesets == 2
        result.add("budget_met", .bool(met))
        result.notes.append("budget (pending row applied ≤ 1 ms, written or derived; confirmed row applied: median ≤ 5 ms, p99 ≤ 20 ms; a derived run's view gets 2 changesets, the pending row's and the commit's): " + (met ? "met" : "missed"))
        result.notes.append("derived_*: the same mutation, alternating, with no expected effect and derivation on: the list shows what the server states the rename does (derived_changesets_max: changesets the view got in one such run)")
        result.notes.append("baseline_*: the same mutation, alternating, with no expected effect (the list shows the row when the server sends it); the list and the mutator share one connection: no call asks the list to sync")
        result.notes.append("own_connection_*: the same mutation with its expected effect, alternating, from a mutator on a connection of its own, which waits for the list's sync")
        result.notes.append("pending_ms: from the call to the pending row's changeset applied by the presenter (the call's task starting included); pending_main_ms: that changeset's hand-over on the main actor")
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
        /// The last changeset applied.
        var at: ContinuousClock.Instant?
        /// The first changeset applied (the pending row's, when the app gave one).
        var first: ContinuousClock.Instant?
        /// The main actor's time handing the first changeset to the presenter.
        var firstMain: Duration?
        /// Changesets applied since the run began.
        var changesets = 0
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
