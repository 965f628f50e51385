import Foundation
import GRDB
import ListDiff
import ListTesting
import LiveQuery

/// `live.update.join.1m`: an inbox — 1M messages (half in the result) joined to 10k contacts,
/// sorted by the contact's name, then the message's date. Each contact of the first half is
/// referenced by 100 result rows. Measured: a one-row write to a message, and a rename of one
/// contact (100 rows move), from the commit to the changeset in hand; the baseline refetches the
/// whole result (identity, content) in order and diffs, as apps without LiveList do.
public enum JoinBenchmarks {
    static let sql = """
        SELECT message.*, contact.name AS contact_name FROM message
        JOIN contact ON contact.id = message.contact_id
        WHERE message.flag = 1
        ORDER BY contact.name, message.date
        """

    /// Runs `live.update.join.1m` unless `quick`, or `filter` (a name prefix) leaves it out.
    public static func run(quick: Bool, filter: String?) async throws -> [BenchResult] {
        guard !quick, filter.map({ "live.update.join.1m".hasPrefix($0) }) ?? true else { return [] }
        return [try await join()]
    }

    static func makeDatabase() throws -> DatabaseQueue {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: directory.appendingPathComponent("join.sqlite").path)
        var random = SeededRandomNumberGenerator(seed: 0x701)
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE contact(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                CREATE TABLE message(id INTEGER PRIMARY KEY, contact_id INTEGER NOT NULL, date INTEGER NOT NULL, flag INTEGER NOT NULL,
                                     subject TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0);
                """)
            let contact = try db.makeStatement(sql: "INSERT INTO contact(id, name) VALUES (?, ?)")
            for id in 0..<10_000 { try contact.execute(arguments: [id, LiveQueryBenchmarks.randomName(&random)]) }
            let message = try db.makeStatement(sql: "INSERT INTO message(contact_id, date, flag, subject) VALUES (?, ?, ?, ?)")
            for number in 0..<1_000_000 {
                let flag = number % 2
                // Result rows (flag 1) go to contacts 0..<5000, 100 each; the others to the rest.
                let contactID = (number / 2) % 5_000 + (flag == 1 ? 0 : 5_000)
                try message.execute(arguments: [contactID, Int.random(in: 0..<1_000_000_000, using: &random), flag, "s\(number)"])
            }
            try db.execute(sql: "CREATE INDEX message_contact ON message(contact_id)")
        }
        return queue
    }

    static func join() async throws -> BenchResult {
        let name = "live.update.join.1m"
        let queue = try makeDatabase()
        let inbox = UpdateInbox()
        let clock = ContinuousClock()
        let openStart = clock.now
        let query = try await LiveQuery.open(LiveQueryRequest(sql: sql), in: queue, options: .init(dataVersionPollInterval: nil, firstScreenRows: nil),
                                             callbackQueue: nil, onEvent: { inbox.append($0) })
        let openMilliseconds = Stopwatch.milliseconds(openStart.duration(to: clock.now))
        guard query.mode == .incremental else { throw BenchFailure("\(name): expected the incremental path, got \(query.mode)") }
        var random = SeededRandomNumberGenerator(seed: 0x702)

        func collect(_ latencies: inout [Double], moved: inout [Int]) throws {
            for update in inbox.drain() {
                guard update.path == .incremental else { throw BenchFailure("\(name): expected the incremental path, got \(update.path)") }
                latencies.append(Stopwatch.milliseconds(update.latency))
                moved.append(update.changeset.changes.itemMoves.count)
            }
        }
        // One-row writes to the base table: a message gets a new date (it moves within its contact).
        var base: [Double] = [], baseMoves: [Int] = []
        for _ in 0..<51 {
            let id = Int64.random(in: 1...500_000, using: &random) * 2   // an even rowid: flag 1
            let date = Int.random(in: 0..<1_000_000_000, using: &random)
            try await queue.write { db in
                try db.execute(sql: "UPDATE message SET date = ?, version = version + 1 WHERE id = ?", arguments: [date, id])
            }
            try collect(&base, moved: &baseMoves)
        }
        // Renames of a contact referenced by 100 result rows: they all move.
        var joined: [Double] = [], joinedMoves: [Int] = []
        for _ in 0..<51 {
            let contact = Int.random(in: 0..<5_000, using: &random)
            let newName = LiveQueryBenchmarks.randomName(&random)
            try await queue.write { db in try db.execute(sql: "UPDATE contact SET name = ? WHERE id = ?", arguments: [newName, contact]) }
            try collect(&joined, moved: &joinedMoves)
        }
        guard !base.isEmpty, !joined.isEmpty else { throw BenchFailure("\(name): no changeset delivered") }
        let current = query.latestResult
        let fresh = try await queue.read { db in
            try Int64.fetchAll(db, sql: "SELECT message.id FROM message JOIN contact ON contact.id = message.contact_id WHERE message.flag = 1 ORDER BY contact.name, message.date, message.id")
        }
        guard current.rows(in: 0..<current.count).map(\.id) == fresh else { throw BenchFailure("\(name): live result differs from a fresh query") }

        // Baseline: the same rename, then the whole result refetched (identity, content) and diffed.
        var baseline: [Double] = []
        var previous = try await fetchResult(queue)
        for _ in 0..<5 {
            let contact = Int.random(in: 0..<5_000, using: &random)
            let newName = LiveQueryBenchmarks.randomName(&random)
            try await queue.write { db in try db.execute(sql: "UPDATE contact SET name = ? WHERE id = ?", arguments: [newName, contact]) }
            _ = inbox.drain()
            let start = clock.now
            let next = try await fetchResult(queue)
            blackHole(Changeset(from: previous, to: next))
            baseline.append(Stopwatch.milliseconds(start.duration(to: clock.now)))
            previous = next
        }
        withExtendedLifetime(query) {}

        var result = BenchResult(name: name, medianMilliseconds: LiveQueryBenchmarks.median(base), runs: base.count)
        result.baseline = "refetch (identity, content) of the joined query + diff"
        result.baselineMedianMilliseconds = LiveQueryBenchmarks.median(baseline)
        let joinedMedian = LiveQueryBenchmarks.median(joined)
        result.add("joined_median_ms", .double(BenchResult.rounded(joinedMedian)))
        result.add("joined_p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(joined, 0.99))))
        result.add("p99_ms", .double(BenchResult.rounded(LiveQueryBenchmarks.percentile(base, 0.99))))
        result.add("baseline_over_joined", .double(BenchResult.rounded(LiveQueryBenchmarks.median(baseline) / max(joinedMedian, 0.000_001))))
        result.add("joined_moves_median", .integer(Int64(joinedMoves.sorted()[joinedMoves.count / 2])))
        result.add("rows", .integer(1_000_000))
        result.add("in_result", .integer(Int64(current.count)))
        result.add("open_ms", .double(BenchResult.rounded(openMilliseconds)))
        return result
    }

    /// The joined result as apps without LiveList fetch it: identity and a content version
    /// (the message's version and the contact's name), in order.
    static func fetchResult(_ reader: any DatabaseReader) async throws -> ListSnapshot<SingleSection, VersionedItem<Int64, Int>> {
        try await reader.read { db in
            var items: [VersionedItem<Int64, Int>] = []
            let rows = try Row.fetchCursor(db, sql: """
                SELECT message.id, message.version, contact.name FROM message JOIN contact ON contact.id = message.contact_id
                WHERE message.flag = 1 ORDER BY contact.name, message.date, message.id
                """)
            while let row = try rows.next() {
                var hasher = Hasher()
                hasher.combine(row[1] as Int64)
                hasher.combine(row[2] as String)
                items.append(VersionedItem(id: row[0], version: hasher.finalize()))
            }
            return ListSnapshot(items: items)
        }
    }
}
