import Foundation
import ListDiff
import ListTesting
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// The engine seam, exercised by an engine that is not SQLite: an in-memory table with its own
/// order (score descending, then the row key), its own filter (scores below zero are out) and
/// its own failures, plugged into the engine-independent core (``LiveTracker``) through the same
/// three parts SQLite uses — an ordering, reads, and the tracking state's events. No database.
@Suite("The engine seam")
struct LiveTrackerTests {
    /// Scores descending, then the row key ascending: an order no SQLite comparator is asked for.
    struct ScoreDescending: RowOrdering {
        func compare(_ lhs: IndexEntry, _ rhs: IndexEntry) -> Int {
            guard case let .integer(a) = lhs.key.first, case let .integer(b) = rhs.key.first else { return 0 }
            if a != b { return a > b ? -1 : 1 }
            return lhs.rowid < rhs.rowid ? -1 : (lhs.rowid == rhs.rowid ? 0 : 1)
        }
    }

    /// The toy engine: rows by key, each a score and a content token.
    struct MemoryEngine: EngineReads {
        var rows: [Int64: (score: Int64, token: UInt64)] = [:]
        var failsReads = false

        func entry(_ key: Int64) -> IndexEntry? {
            guard let row = rows[key], row.score >= 0 else { return nil }
            return IndexEntry(key: .single(.integer(row.score)), rowid: key, token: row.token)
        }

        /// What the engine itself answers for the query: the oracle.
        var result: [Int64] {
            rows.keys.compactMap(entry).sorted { ScoreDescending().compare($0, $1) < 0 }.map(\.rowid)
        }

        /// The same answer as the oracle harness compares it: identity, no section, content.
        var oracleRows: [OracleRow] {
            result.compactMap { key in
                rows[key].map { OracleRow(identity: .integer(key), section: .null, content: "\($0.score)/\($0.token)") }
            }
        }

        func reread(_ keys: [Int64]) throws(LiveQueryError) -> [IndexEntry] {
            if failsReads { throw LiveQueryError.changeLogUnavailable("the memory engine is failing") }
            return keys.compactMap(entry)
        }

        func fetchAll(into builder: inout IndexBuilder, mayBeLarge: Bool) throws(LiveQueryError) {
            if failsReads { throw LiveQueryError.changeLogUnavailable("the memory engine is failing") }
            for key in result { if let entry = entry(key) { builder.append(entry) } }
        }
    }

    /// Events the channel delivered, in order.
    final class Events: @unchecked Sendable {
        // `@unchecked Sendable`: `list` is only touched under `lock`.
        private let lock = NSLock()
        private var list: [LiveQueryEvent<Int64>] = []
        func append(_ event: LiveQueryEvent<Int64>) { lock.withLock { list.append(event) } }
        func drain() -> [LiveQueryEvent<Int64>] { lock.withLock { defer { list = [] }; return list } }
    }

    static let layout = ResultLayout(ordering: ScoreDescending(), identityIsRowid: true, sections: nil, sectionsArePositional: false)

    static func tracker(_ engine: MemoryEngine, firstScreen: Int? = nil, events: Events) throws -> LiveTracker<Int64> {
        var builder = IndexBuilder(layout: layout, canonicalIdentity: { $0 })
        try engine.fetchAll(into: &builder, mayBeLarge: false)
        let index: LiveIndex
        if let firstScreen {
            var screen = IndexBuilder(layout: layout, canonicalIdentity: { $0 })
            for key in engine.result.prefix(firstScreen) { if let entry = engine.entry(key) { screen.append(entry) } }
            index = LiveIndex(builder: screen, identityType: "Int64", isComplete: false)
        } else {
            index = LiveIndex(builder: builder, identityType: "Int64")
        }
        let channel = EventChannel<Int64>(initial: LiveResult(index.current), callbackQueue: nil) { events.append($0) }
        return LiveTracker(index: index, layout: layout,
                            state: TrackingState(isBuilding: firstScreen != nil, refetchThreshold: 40),
                            channel: channel, statistics: StatisticsBox())
    }

    static func ids(_ result: LiveResult<Int64>) -> [Int64] { result.rows(in: 0..<result.count).map(\.id) }

    @Test("random writes reach the core through the seam: every stage passes the strict view, which ends showing the engine's own answer")
    @MainActor
    func randomCommits() throws {
        let seed = SeededRandomNumberGenerator.testSeed("LiveTrackerTests.randomCommits")
        var random = SeededRandomNumberGenerator(seed: seed)
        var engine = MemoryEngine()
        for key in 1...60 { engine.rows[Int64(key)] = (Int64.random(in: -10...50, using: &random), 0) }
        let events = Events()
        let tracker = try Self.tracker(engine, events: events)
        let harness = OracleHarness(tracker.channel.latestResult, expected: engine.oracleRows)
        #expect(harness.check("initial"))
        var nextKey: Int64 = 61
        for commit in 0..<200 {
            let context = "seed \(seed), commit \(commit)"
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                let key: Int64
                switch Int.random(in: 0..<4, using: &random) {
                case 0:
                    key = nextKey
                    nextKey += 1
                    engine.rows[key] = (Int64.random(in: -10...50, using: &random), 0)
                case 1:
                    key = Int64.random(in: 1..<nextKey, using: &random)
                    engine.rows[key] = nil
                case 2:
                    key = Int64.random(in: 1..<nextKey, using: &random)
                    guard let row = engine.rows[key] else { continue }
                    engine.rows[key] = (row.score, row.token + 1)   // content only
                default:
                    key = Int64.random(in: 1..<nextKey, using: &random)
                    guard let row = engine.rows[key] else { continue }
                    engine.rows[key] = (Int64.random(in: -10...50, using: &random), row.token + 1)
                }
                tracker.state.touched(key)
            }
            if commit % 50 == 49 { tracker.state.needsRefetch(.undescribedChanges) }
            try tracker.carryOut(tracker.state.committed(), engine, start: .now)
            guard harness.step(expecting: engine.oracleRows, events: events.drain(), rolledBack: false, context: context),
                  harness.check(context) else { return }
        }
        #expect(harness.tally.failures.isEmpty)
        #expect(tracker.statistics.current.refetches == 4)
    }

    @Test("a refetch that finds a few rows changed keeps every other node of the result before: a kept result costs the change")
    func refetchSharesUnchangedNodes() throws {
        var engine = MemoryEngine()
        for key in 1...20_000 { engine.rows[Int64(key)] = (Int64(key % 5_000), 0) }
        let events = Events()
        let tracker = try Self.tracker(engine, events: events)
        let before = tracker.channel.latestResult.storage.rows.nodeIdentifiers
        engine.rows[7] = (7, 1)                // content
        engine.rows[8] = (4_000, 1)            // a move
        engine.rows[9] = nil                   // a delete
        engine.rows[20_001] = (2_500, 0)       // an insert
        tracker.state.needsRefetch(.undescribedChanges)
        try tracker.carryOut(tracker.state.committed(), engine, start: .now)
        let after = tracker.channel.latestResult
        #expect(Self.ids(after) == engine.result)
        let fresh = after.storage.rows.nodeIdentifiers.subtracting(before)
        // Four rows: at most four leaves and their paths (a split or two included), of ~80 leaves.
        #expect(fresh.count <= 16, "\(fresh.count) of \(after.storage.rows.nodeIdentifiers.count) nodes are new")
        guard case let .update(update)? = events.drain().last else {
            Issue.record("the refetch delivers an update")
            return
        }
        let changes = update.changeset.changes
        #expect(changes.itemDeletes.count == 1 && changes.itemInserts.count == 1 && changes.itemMoves.count == 1
                && changes.itemReloads.count == 2, "\(changes)")

        // Most rows changed: the result is built again, and is still the engine's answer.
        for key in 1...20_000 where key % 3 == 0 { engine.rows[Int64(key)] = (Int64(key % 7), 2) }
        tracker.state.needsRefetch(.undescribedChanges)
        try tracker.carryOut(tracker.state.committed(), engine, start: .now)
        #expect(Self.ids(tracker.channel.latestResult) == engine.result)
    }

    @Test("refetches of every size, applied as changes or built again, pass the strict view and end at the engine's answer")
    @MainActor
    func randomRefetches() throws {
        let seed = SeededRandomNumberGenerator.testSeed("LiveTrackerTests.randomRefetches")
        var random = SeededRandomNumberGenerator(seed: seed)
        var engine = MemoryEngine()
        for key in 1...2_000 { engine.rows[Int64(key)] = (Int64.random(in: -100...500, using: &random), 0) }
        let events = Events()
        let tracker = try Self.tracker(engine, events: events)
        let harness = OracleHarness(tracker.channel.latestResult, expected: engine.oracleRows)
        var nextKey: Int64 = 2_001
        var token: UInt64 = 0
        for commit in 0..<60 {
            let context = "seed \(seed), commit \(commit)"
            // Mostly small commits (applied as changes), now and then one past an eighth of the rows.
            let size = commit % 10 == 9 ? Int.random(in: 260...900, using: &random) : Int.random(in: 0...40, using: &random)
            for _ in 0..<size {
                let key = Int64.random(in: 1..<nextKey + 5, using: &random)
                // A token per write, as an engine's digest of the row's content is (one that
                // comes back deleted and written again must not look unchanged).
                token += 1
                switch Int.random(in: 0..<4, using: &random) {
                case 0: engine.rows[key] = nil
                case 1: engine.rows[key] = (engine.rows[key]?.score ?? 0, token)
                default: engine.rows[key] = (Int64.random(in: -100...500, using: &random), token)
                }
                nextKey = max(nextKey, key + 1)
            }
            tracker.state.needsRefetch(.undescribedChanges)
            try tracker.carryOut(tracker.state.committed(), engine, start: .now)
            guard harness.step(expecting: engine.oracleRows, events: events.drain(), rolledBack: false, context: context),
                  harness.check(context) else { return }
        }
        #expect(harness.tally.failures.isEmpty)
    }

    /// Rows 1…10 followed, then a commit writes `row` of `key` and its read fails: the failure is
    /// reported (and left in `events`), the engine still failing reads.
    static func failedRead(of key: Int64, as row: (score: Int64, token: UInt64)) throws -> (MemoryEngine, LiveTracker<Int64>, Events) {
        var engine = MemoryEngine()
        for key in 1...10 { engine.rows[Int64(key)] = (Int64(key), 0) }
        let events = Events()
        let tracker = try Self.tracker(engine, events: events)
        engine.rows[key] = row
        engine.failsReads = true
        tracker.state.touched(key)
        #expect(throws: LiveQueryError.self) { try tracker.carryOut(tracker.state.committed(), engine, start: .now) }
        tracker.reportFailure(.changeLogUnavailable("the memory engine is failing"))
        return (engine, tracker, events)
    }

    @Test("a read that fails is one failure event; the core is behind, and the next commit refetches to the engine's answer")
    func failedReadRecovers() throws {
        var (engine, tracker, events) = try Self.failedRead(of: 3, as: (100, 1))
        guard case .failure? = events.drain().first else {
            Issue.record("the failure is delivered")
            return
        }
        #expect(tracker.state.isBehind)
        engine.failsReads = false
        // Nothing touched: being behind is reason enough.
        let action = tracker.state.committed()
        guard case .refetch = action else {
            Issue.record("a core that is behind refetches, not \(action)")
            return
        }
        try tracker.carryOut(action, engine, start: .now)
        #expect(Self.ids(tracker.channel.latestResult) == engine.result)
        #expect(!tracker.state.isBehind)
    }

    @Test("a refetch of any reason that brings a failed query back is delivered, even when the rows are as before the failure",
          arguments: [RefetchReason.tableChanged("scores"), .tooManyRowsChanged(threshold: 40), .anotherConnection(.noChangeLog)])
    func recoveryIsToldWhateverItsReason(reason: RefetchReason) throws {
        // A row comes and fails to be read; then it goes again: the rows are those delivered last.
        var (engine, tracker, events) = try Self.failedRead(of: 11, as: (50, 1))
        _ = events.drain()
        engine.rows[11] = nil
        engine.failsReads = false
        try tracker.refetch(engine, reason: reason, start: .now)
        let delivered = events.drain()
        guard case let .update(update)? = delivered.first else {
            Issue.record("the recovery is delivered, not \(delivered)")
            return
        }
        #expect(update.changeset.changes.isEmpty && Self.ids(update.result) == engine.result)
        #expect(!tracker.state.isBehind)
        // Once following, an empty refetch is not news.
        try tracker.refetch(engine, reason: reason, start: .now)
        #expect(events.drain().isEmpty)
    }

    @Test("the first screen, then the rest through the seam: commits meanwhile are applied once the rest lands")
    @MainActor
    func firstScreenThenRest() throws {
        var engine = MemoryEngine()
        for key in 1...100 { engine.rows[Int64(key)] = (Int64(key % 37), 0) }
        let events = Events()
        let tracker = try Self.tracker(engine, firstScreen: 10, events: events)
        #expect(tracker.channel.latestResult.count == 10 && tracker.isBuilding)
        let harness = OracleHarness(tracker.channel.latestResult, expected: Array(engine.oracleRows.prefix(10)))
        // A commit while the rest is read: remembered, not applied to a partial index.
        engine.rows[50] = (99, 1)
        engine.rows[7] = nil
        tracker.state.touched(50)
        tracker.state.touched(7)
        try tracker.carryOut(tracker.state.committed(), engine, start: .now)
        #expect(events.drain().isEmpty)
        var rest = IndexBuilder(layout: Self.layout, canonicalIdentity: { $0 })
        var stale = engine
        stale.rows[50] = (50 % 37, 0)   // the rest was read before that commit
        stale.rows[7] = (7, 0)
        try stale.fetchAll(into: &rest, mayBeLarge: true)
        tracker.finishBuild(rest, engine)
        let delivered = events.drain()
        guard delivered.count == 1, case let .update(update) = delivered[0] else {
            Issue.record("one update completes the first fetch, not \(delivered)")
            return
        }
        #expect(update.path == .firstFetchCompleted && !tracker.isBuilding)
        #expect(harness.step(expecting: engine.oracleRows, events: delivered, rolledBack: false, context: "first fetch completed"))
        #expect(harness.check("first fetch completed"))
    }
}
