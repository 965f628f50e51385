import Foundation
import GRDB
import ListDiff
import ListTesting
import Testing
@testable import LiveQuery

/// Collects events delivered synchronously on the writer's queue.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [LiveQueryEvent] = []

    func append(_ event: LiveQueryEvent) { lock.withLock { events.append(event) } }
    func drain() -> [LiveQueryEvent] { lock.withLock { defer { events = [] }; return events } }
}

enum TestDatabase {
    /// A fresh database file in a temporary directory.
    static func path() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livequery-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("test.sqlite").path
    }

    static let schema = """
        CREATE TABLE item(
            id INTEGER PRIMARY KEY,
            name TEXT COLLATE NOCASE,
            score,
            flag INTEGER NOT NULL DEFAULT 1,
            version INTEGER NOT NULL DEFAULT 0,
            grp TEXT,
            note TEXT);
        CREATE TABLE enabled_group(name TEXT PRIMARY KEY);
        INSERT INTO enabled_group VALUES ('a'), ('b');
        """

    static let names = ["alpha", "Alpha", "ALPHA", "beta", "Beta", "_under", "zed", "Zed", "é", "É", "alpha ", "alpha  ", " alpha", "", "b", "B"]

    static func randomScore(_ random: inout SeededRandomNumberGenerator) -> DatabaseValue {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: .null
        case 1: Int64.random(in: -5...5, using: &random).databaseValue
        case 2: (Double(Int.random(in: -10...10, using: &random)) / 2).databaseValue
        case 3: ["3", "10", "x", "X"].randomElement(using: &random)!.databaseValue
        default: Int64.random(in: 0...3, using: &random).databaseValue
        }
    }

    static func insertRandomRow(_ db: Database, _ random: inout SeededRandomNumberGenerator) throws {
        try db.execute(
            sql: "INSERT INTO item(name, score, flag, grp, note) VALUES (?, ?, ?, ?, ?)",
            arguments: [names.randomElement(using: &random)!, randomScore(&random), Int.random(in: 0...1, using: &random),
                        ["a", "b", "c", nil].randomElement(using: &random)!, "n"])
    }

    /// One random write: inserts, deletes, sort-key changes, filter flips, version bumps, updates
    /// of unread columns, section changes, and writes to the other table a filter may read.
    static func randomOperation(_ db: Database, _ random: inout SeededRandomNumberGenerator) throws {
        let ids = try Int64.fetchAll(db, sql: "SELECT id FROM item")
        guard let id = ids.randomElement(using: &random) else { return try insertRandomRow(db, &random) }
        switch Int.random(in: 0..<10, using: &random) {
        case 0, 1: try insertRandomRow(db, &random)
        case 2: try db.execute(sql: "DELETE FROM item WHERE id = ?", arguments: [id])
        case 3: try db.execute(sql: "UPDATE item SET name = ? WHERE id = ?", arguments: [names.randomElement(using: &random)!, id])
        case 4: try db.execute(sql: "UPDATE item SET score = ? WHERE id = ?", arguments: [randomScore(&random), id])
        case 5: try db.execute(sql: "UPDATE item SET flag = 1 - flag WHERE id = ?", arguments: [id])
        case 6: try db.execute(sql: "UPDATE item SET version = version + 1 WHERE id = ?", arguments: [id])
        case 7: try db.execute(sql: "UPDATE item SET note = note || 'x' WHERE id = ?", arguments: [id])
        case 8: try db.execute(sql: "UPDATE item SET grp = ? WHERE id = ?", arguments: [["a", "b", "c", nil].randomElement(using: &random)!, id])
        default:
            if Bool.random(using: &random) {
                try db.execute(sql: "INSERT OR IGNORE INTO enabled_group VALUES (?)", arguments: [["a", "b", "c"].randomElement(using: &random)!])
            } else {
                try db.execute(sql: "DELETE FROM enabled_group WHERE name = ?", arguments: [["a", "b", "c"].randomElement(using: &random)!])
            }
        }
    }
}
