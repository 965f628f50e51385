import Foundation
import GRDB
import ListTesting
import LiveListCommands

/// The demo's data: an inbox of conversations in SQLite, and a writer that changes it the way a
/// real inbox changes.
enum InboxDatabase {
    static let secondsPerDay: Int64 = 86_400

    /// A conversation as a cell shows it.
    struct Conversation: Sendable {
        var sender: String
        var subject: String
        var isUnread: Bool
        var lastActivity: Int64
    }

    static let senders = ["Ada Lovelace", "Grace Hopper", "Linus Torvalds", "Barbara Liskov", "Ken Thompson",
                          "Margaret Hamilton", "Dennis Ritchie", "Frances Allen", "Edsger Dijkstra", "Radia Perlman",
                          "John Backus", "Leslie Lamport", "Donald Knuth", "Hedy Lamarr", "Alan Kay", "Adele Goldberg"]
    static let subjects = ["Lunch on Friday?", "Build is red again", "Quarterly numbers", "Re: design review", "Invoice #4411",
                           "Trip to Lisbon", "Release notes draft", "Your order has shipped", "Standup notes", "Re: Re: the bug",
                           "Offsite agenda", "Welcome aboard", "Password reset", "Coffee?", "Slides for Tuesday", "Benchmarks"]

    /// Opens (creating if needed) the database at `path`; an existing file must hold the demo schema.
    static func open(path: String, rows: Int, seed: UInt64) throws(InputError) -> DatabaseQueue {
        let exists = FileManager.default.fileExists(atPath: path)
        let queue: DatabaseQueue
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(5)
            queue = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw InputError("cannot open the database at \(path): \(error)")
        }
        do {
            let hasSchema = try queue.read { db in try db.tableExists("conversation") }
            // Never add the demo's tables to someone else's database.
            if exists && !hasSchema, try queue.read({ db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") ?? 0 }) > 0 {
                throw InputError("\(path) is not a livelist demo database (no conversation table)")
            }
            if !hasSchema { try create(queue, rows: rows, seed: seed) }
            let columns = try queue.read { db in Set(try db.columns(in: "conversation").map(\.name)) }
            guard columns.isSuperset(of: ["id", "sender", "subject", "unread", "archived", "last_activity", "day", "version"]) else {
                throw InputError("\(path) has a conversation table without the demo's columns")
            }
        } catch let error as InputError {
            throw error
        } catch {
            throw InputError("\(path) is not a readable SQLite database (\(error))")
        }
        return queue
    }

    static func create(_ queue: DatabaseQueue, rows: Int, seed: UInt64) throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let now = Int64(Date().timeIntervalSince1970)
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE conversation(
                    id INTEGER PRIMARY KEY,
                    sender TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    unread INTEGER NOT NULL,
                    archived INTEGER NOT NULL DEFAULT 0,
                    last_activity INTEGER NOT NULL,
                    day INTEGER NOT NULL,
                    version INTEGER NOT NULL DEFAULT 0);
                """)
            let insert = try db.makeStatement(sql: "INSERT INTO conversation(sender, subject, unread, last_activity, day) VALUES (?, ?, ?, ?, ?)")
            for _ in 0..<rows {
                let time = now - Int64.random(in: 0..<(60 * secondsPerDay), using: &random)
                try insert.execute(arguments: [senders.randomElement(using: &random) ?? "", subjects.randomElement(using: &random) ?? "",
                                               Int.random(in: 0..<4, using: &random) == 0 ? 1 : 0, time, time / secondsPerDay])
            }
            try db.execute(sql: "CREATE INDEX conversation_inbox ON conversation(archived, day, last_activity)")
        }
    }

    /// One transaction of live changes: new messages move conversations to the top, reads flip
    /// the unread flag, archives remove rows from the inbox, deletes, new conversations; every
    /// tenth call is a burst of many changes at once.
    static func write(_ db: Database, count: Int, random: inout SeededRandomNumberGenerator) throws -> Int {
        let now = Int64(Date().timeIntervalSince1970)
        let maxID = try Int64.fetchOne(db, sql: "SELECT max(id) FROM conversation") ?? 0
        var touched = 0
        for _ in 0..<count {
            let id = Int64.random(in: 1...max(1, maxID), using: &random)
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<35:
                try db.execute(sql: "UPDATE conversation SET last_activity = ?, day = ?, unread = 1, version = version + 1 WHERE id = ?",
                               arguments: [now, now / secondsPerDay, id])
            case 35..<60:
                try db.execute(sql: "UPDATE conversation SET unread = 1 - unread, version = version + 1 WHERE id = ?", arguments: [id])
            case 60..<72:
                try db.execute(sql: "UPDATE conversation SET archived = 1, version = version + 1 WHERE id = ?", arguments: [id])
            case 72..<80:
                try db.execute(sql: "DELETE FROM conversation WHERE id = ?", arguments: [id])
            default:
                try db.execute(sql: "INSERT INTO conversation(sender, subject, unread, last_activity, day) VALUES (?, ?, 1, ?, ?)",
                               arguments: [senders.randomElement(using: &random) ?? "", subjects.randomElement(using: &random) ?? "", now, now / secondsPerDay])
            }
            touched += db.changesCount
        }
        return touched
    }
}
