import Foundation
import GRDB
import ListDiff
import ListTesting
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// Collects events delivered synchronously on the writer's queue.
final class EventLog<ID: LiveIdentity>: @unchecked Sendable {
    // Guarded by `lock`: appended on the writer's queue, drained by the test.
    private let lock = NSLock()
    private var events: [LiveQueryEvent<ID>] = []
    private var initials: [LiveResult<ID>] = []

    /// Keeps updates and failures; `.initial` (delivered once, at open) is kept apart.
    func append(_ event: LiveQueryEvent<ID>) {
        lock.withLock {
            if case let .initial(result) = event { initials.append(result) } else { events.append(event) }
        }
    }

    /// The `.initial` results delivered so far.
    var initialResults: [LiveResult<ID>] { lock.withLock { initials } }
    func drain() -> [LiveQueryEvent<ID>] { lock.withLock { defer { events = [] }; return events } }

    var updates: [LiveQueryUpdate<ID>] {
        drain().compactMap { if case let .update(update) = $0 { update } else { nil } }
    }
}

/// Awaits `body` for at most `seconds`: a regression that stops an event from coming fails the
/// test instead of hanging it.
func withTimeLimit<T: Sendable>(_ seconds: Double = 30, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TimeLimitExceeded(seconds: seconds)
        }
        return value
    }
}

struct TimeLimitExceeded: Error, CustomStringConvertible {
    var seconds: Double
    var description: String { "nothing arrived within \(seconds) s" }
}

/// The next event of `iterator` within the time limit.
func nextEvent<ID: LiveIdentity>(_ stream: AsyncStream<LiveQueryEvent<ID>>, skippingInitial: Bool = true, seconds: Double = 30) async throws -> LiveQueryEvent<ID> {
    try await withTimeLimit(seconds) {
        for await event in stream {
            if case .initial = event, skippingInitial { continue }
            return event
        }
        throw StreamEnded()
    }
}

struct StreamEnded: Error {}

/// One step of a random workload: `operations` random writes in one transaction seeded by
/// `seed`, rolled back when `rollback`; `true` when it committed.
func randomTransaction(
    on writer: any DatabaseWriter, operations: Int, seed: UInt64, rollback: Bool,
    _ operation: @escaping @Sendable (Database, inout SeededRandomNumberGenerator) throws -> Void
) async throws -> Bool {
    do {
        try await writer.write { db in
            var random = SeededRandomNumberGenerator(seed: seed)
            for _ in 0..<operations { try operation(db, &random) }
            if rollback { throw Rollback() }
        }
        return true
    } catch is Rollback {
        return false
    }
}

struct UnexpectedEvent: Error, CustomStringConvertible {
    var description: String
}

/// The next update of `stream` within the time limit, skipping the initial result; another event
/// (a failure) or the end of the stream throws.
func nextUpdate<ID: LiveIdentity>(_ stream: AsyncStream<LiveQueryEvent<ID>>, seconds: Double = 30) async throws -> LiveQueryUpdate<ID> {
    let event = try await nextEvent(stream, seconds: seconds)
    guard case let .update(update) = event else { throw UnexpectedEvent(description: "expected an update, got \(event)") }
    return update
}

enum TestDatabase {
    /// Waits up to 10 s for another connection's lock (a live query's background read, another
    /// test connection) instead of failing at once, as an app with several connections does.
    static var patient: Configuration {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        return configuration
    }

    /// A fresh database file in a temporary directory.
    static func path() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livequery-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("test.sqlite").path
    }

    static let schema = """
        CREATE TABLE owner(id INTEGER PRIMARY KEY, label TEXT);
        INSERT INTO owner(id, label) VALUES (1, 'one'), (2, 'two'), (3, 'three');
        CREATE TABLE item(
            id INTEGER PRIMARY KEY,
            name TEXT COLLATE NOCASE,
            score,
            flag INTEGER NOT NULL DEFAULT 1,
            version INTEGER NOT NULL DEFAULT 0,
            grp TEXT,
            note TEXT,
            code TEXT UNIQUE,
            owner_id INTEGER REFERENCES owner(id) ON DELETE CASCADE ON UPDATE CASCADE);
        CREATE TABLE enabled_group(name TEXT PRIMARY KEY);
        INSERT INTO enabled_group VALUES ('a'), ('b');
        -- A user trigger that writes to the observed table.
        CREATE TRIGGER enabled_group_touches_items AFTER INSERT ON enabled_group BEGIN
            UPDATE item SET note = coalesce(note, '') || '!' WHERE grp = NEW.name;
        END;
        """

    /// Text SQLite stores but Swift would compare or decode differently: canonically equivalent
    /// forms, case variants NOCASE folds or not, trailing spaces, an embedded NUL, invalid UTF-8.
    static let names: [String] = [
        "'alpha'", "'Alpha'", "'ALPHA'", "'beta'", "'Beta'", "'_under'", "'zed'", "'Zed'",
        "'é'", "'e' || char(769)", "'É'", "'E' || char(769)", "'Zoë'", "'Zo' || char(235)", "'Zoe' || char(776)", "'Zof'",
        "'alpha '", "'alpha  '", "' alpha'", "''", "'a' || char(0) || 'b'", "'a'", "'a' || char(0)",
        "CAST(X'FF41' AS TEXT)", "CAST(X'C3' AS TEXT)", "CAST(X'61FF' AS TEXT)", "'b'", "'B'",
    ]

    /// Section values: canonically equivalent forms are different sections, as in SQLite.
    static let groups: [String] = ["'a'", "'b'", "'c'", "NULL", "'é'", "'e' || char(769)", "'Zoë'", "'Zoe' || char(776)",
                                   "CAST(X'FF' AS TEXT)", "'a' || char(0)"]

    static func score(_ random: inout SeededRandomNumberGenerator) -> String {
        switch Int.random(in: 0..<7, using: &random) {
        case 0: "NULL"
        case 1: String(Int64.random(in: -5...5, using: &random))
        case 2: String(Double(Int.random(in: -10...10, using: &random)) / 2)
        case 3: ["'3'", "'10'", "'x'", "'X'", "'é'", "'e' || char(769)"].randomElement(using: &random) ?? "'x'"
        case 4: ["X'00'", "X''", "X'FF'"].randomElement(using: &random) ?? "X''"
        case 5: ["9223372036854775807", "-9223372036854775808", "9007199254740993", "9007199254740992.0"].randomElement(using: &random) ?? "0"
        default: String(Int64.random(in: 0...3, using: &random))
        }
    }

    static func pick(_ values: [String], _ random: inout SeededRandomNumberGenerator) -> String {
        values[Int.random(in: 0..<values.count, using: &random)]
    }

    static func insertRandomRow(_ db: Database, _ random: inout SeededRandomNumberGenerator, verb: String = "INSERT OR IGNORE") throws {
        let code = Int.random(in: 0..<4, using: &random) == 0 ? "NULL" : "'c\(Int.random(in: 0..<60, using: &random))'"
        try db.execute(sql: """
            \(verb) INTO item(name, score, flag, grp, note, code, owner_id)
            VALUES (\(pick(names, &random)), \(score(&random)), \(Int.random(in: 0...1, using: &random)), \(pick(groups, &random)), 'n', \(code), \(Int.random(in: 1...3, using: &random)))
            """)
    }

    /// One random write of every kind LiveList must follow: inserts, deletes, sort, filter and
    /// section changes, content changes with and without a version bump, rowid changes, REPLACE
    /// in all its spellings, UPSERT, a user trigger, foreign-key cascades, and the truncate path.
    static func randomOperation(_ db: Database, _ random: inout SeededRandomNumberGenerator) throws {
        do {
            try randomWrite(db, &random)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            // A plain INSERT onto a taken code fails alone; the transaction goes on.
        }
    }

    static func randomWrite(_ db: Database, _ random: inout SeededRandomNumberGenerator) throws {
        let ids = try Int64.fetchAll(db, sql: "SELECT id FROM item")
        guard let id = ids.randomElement(using: &random) else { return try insertRandomRow(db, &random) }
        let codes = try String.fetchAll(db, sql: "SELECT code FROM item WHERE code IS NOT NULL")
        let existingCode = codes.randomElement(using: &random).map { "'\($0)'" } ?? "'c0'"
        switch Int.random(in: 0..<24, using: &random) {
        case 0, 1: try insertRandomRow(db, &random)
        case 2: try insertRandomRow(db, &random, verb: "INSERT")
        case 3: try db.execute(sql: "DELETE FROM item WHERE id = ?", arguments: [id])
        case 4, 5: try db.execute(sql: "UPDATE item SET name = \(pick(names, &random)) WHERE id = ?", arguments: [id])
        case 6: try db.execute(sql: "UPDATE item SET score = \(score(&random)) WHERE id = ?", arguments: [id])
        case 7: try db.execute(sql: "UPDATE item SET flag = 1 - flag WHERE id = ?", arguments: [id])
        case 8: try db.execute(sql: "UPDATE item SET version = version + 1 WHERE id = ?", arguments: [id])
        case 9: try db.execute(sql: "UPDATE item SET note = coalesce(note, '') || 'x' WHERE id = ?", arguments: [id])
        case 10: try db.execute(sql: "UPDATE item SET grp = \(pick(groups, &random)) WHERE id = ?", arguments: [id])
        case 11:   // a rowid change: the update hook reports only the new rowid
            let target = (ids.max() ?? 0) + Int64.random(in: 1...3, using: &random)
            try db.execute(sql: "UPDATE item SET id = ? WHERE id = ?", arguments: [target, id])
        case 12:   // REPLACE over another row's unique code: that row is deleted silently
            try db.execute(sql: "INSERT OR REPLACE INTO item(name, score, grp, code, owner_id) VALUES (\(pick(names, &random)), \(score(&random)), \(pick(groups, &random)), \(existingCode), 1)")
        case 13:   // REPLACE INTO over an existing rowid
            try db.execute(sql: "REPLACE INTO item(id, name, score, grp, owner_id) VALUES (?, \(pick(names, &random)), \(score(&random)), \(pick(groups, &random)), 2)", arguments: [id])
        case 14:   // UPDATE OR REPLACE onto another row's code
            try db.execute(sql: "UPDATE OR REPLACE item SET code = \(existingCode) WHERE id = ?", arguments: [id])
        case 15:   // UPSERT
            try db.execute(sql: "INSERT INTO item(name, score, code, owner_id) VALUES (\(pick(names, &random)), \(score(&random)), \(existingCode), 3) ON CONFLICT(code) DO UPDATE SET score = excluded.score, name = excluded.name")
        case 16:   // a foreign-key cascade deletes items
            try db.execute(sql: "DELETE FROM owner WHERE id = ?", arguments: [Int.random(in: 1...3, using: &random)])
            try db.execute(sql: "INSERT OR IGNORE INTO owner(id, label) VALUES (1, 'one'), (2, 'two'), (3, 'three')")
        case 17:   // a cascade that updates items: content changes without a version bump
            let from = Int.random(in: 1...3, using: &random)
            try db.execute(sql: "UPDATE owner SET id = id + 100 WHERE id = ?", arguments: [from])
            try db.execute(sql: "UPDATE owner SET id = id - 100 WHERE id = ?", arguments: [from + 100])
        case 18:   // a user trigger writes to the observed table
            try db.execute(sql: "INSERT OR IGNORE INTO enabled_group VALUES (\(pick(["'a'", "'b'", "'c'", "'é'"], &random)))")
        case 19:
            try db.execute(sql: "DELETE FROM enabled_group WHERE name = \(pick(["'a'", "'b'", "'c'", "'é'"], &random))")
        case 20:   // many rows at once
            try db.execute(sql: "UPDATE item SET score = \(score(&random)) WHERE id % 3 = ?", arguments: [Int.random(in: 0..<3, using: &random)])
        case 21 where Int.random(in: 0..<4, using: &random) == 0:   // DELETE without WHERE (the truncate path)
            try db.execute(sql: "DELETE FROM item")
        case 22:
            try db.execute(sql: "UPDATE item SET name = \(pick(names, &random)), grp = \(pick(groups, &random)) WHERE id IN (?, ?)",
                           arguments: [id, ids.randomElement(using: &random) ?? id])
        default: try insertRandomRow(db, &random, verb: "INSERT OR REPLACE")
        }
    }
}
