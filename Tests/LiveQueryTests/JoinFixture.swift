import Foundation
import GRDB
import ListTesting
@testable import LiveQuery
@testable import LiveQueryCore

/// A music library: tracks meet at most one album, albums at most one artist. Keys of every
/// storage class; names that SQLite compares differently from Swift.
enum MusicDatabase {
    static let schema = """
        CREATE TABLE artist(
            id INTEGER PRIMARY KEY,
            name TEXT COLLATE NOCASE,
            code TEXT UNIQUE);
        CREATE TABLE album(
            id INTEGER PRIMARY KEY,
            title TEXT,
            artist_id INTEGER REFERENCES artist(id) ON DELETE SET NULL,
            uuid BLOB UNIQUE,
            year);
        CREATE INDEX album_artist ON album(artist_id);
        CREATE TABLE track(
            id INTEGER PRIMARY KEY,
            uuid TEXT NOT NULL UNIQUE,
            uuid_blob BLOB UNIQUE,
            title TEXT,
            album_id INTEGER,
            rank,
            flag INTEGER NOT NULL DEFAULT 1);
        CREATE INDEX track_album ON track(album_id);
        """

    static let names: [String] = [
        "'alpha'", "'Alpha'", "'ALPHA'", "'beta'", "'Beta'", "'zed'", "'é'", "'e' || char(769)", "'Zoë'", "'Zoe' || char(776)",
        "'alpha '", "''", "'a' || char(0) || 'b'", "'a'", "NULL", "CAST(X'FF41' AS TEXT)", "'b'", "'B'",
    ]

    static func pick(_ values: [String], _ random: inout SeededRandomNumberGenerator) -> String {
        values[Int.random(in: 0..<values.count, using: &random)]
    }

    static func rank(_ random: inout SeededRandomNumberGenerator) -> String {
        switch Int.random(in: 0..<5, using: &random) {
        case 0: "NULL"
        case 1: String(Int.random(in: -3...3, using: &random))
        case 2: String(Double(Int.random(in: -6...6, using: &random)) / 2)
        case 3: pick(["'3'", "'x'", "'X'", "X'00'"], &random)
        default: String(Int.random(in: 0...2, using: &random))
        }
    }

    static func uuidText(_ random: inout SeededRandomNumberGenerator) -> String {
        var generator = random
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        random = generator
        let uuid = bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        return "'\(uuid.uuidString)'"
    }

    static func populate(_ db: Database, _ random: inout SeededRandomNumberGenerator, artists: Int = 5, albums: Int = 10, tracks: Int = 50) throws {
        for number in 1...artists {
            try db.execute(sql: "INSERT INTO artist(id, name, code) VALUES (?, \(pick(names, &random)), ?)", arguments: [number, "a\(number)"])
        }
        for number in 1...albums {
            let artist = Int.random(in: 0...artists, using: &random)
            try db.execute(sql: "INSERT INTO album(id, title, artist_id, uuid, year) VALUES (?, \(pick(names, &random)), ?, randomblob(16), ?)",
                           arguments: [number, artist == 0 ? nil : artist, Int.random(in: 1990...1995, using: &random)])
        }
        for _ in 0..<tracks { try insertTrack(db, &random) }
    }

    static func insertTrack(_ db: Database, _ random: inout SeededRandomNumberGenerator, verb: String = "INSERT") throws {
        let album = Int.random(in: 0..<8, using: &random) == 0 ? "NULL" : String(Int.random(in: 1...12, using: &random))
        try db.execute(sql: """
            \(verb) INTO track(uuid, uuid_blob, title, album_id, rank, flag)
            VALUES (\(uuidText(&random)), randomblob(16), \(pick(names, &random)), \(album), \(rank(&random)), \(Int.random(in: 0...1, using: &random)))
            """)
    }

    /// One random write to any of the three tables.
    static func randomOperation(_ db: Database, _ random: inout SeededRandomNumberGenerator) throws {
        do {
            try randomWrite(db, &random)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            // A unique key taken: the statement fails alone.
        }
    }

    static func randomWrite(_ db: Database, _ random: inout SeededRandomNumberGenerator) throws {
        let tracks = try Int64.fetchAll(db, sql: "SELECT id FROM track")
        let albums = try Int64.fetchAll(db, sql: "SELECT id FROM album")
        let artists = try Int64.fetchAll(db, sql: "SELECT id FROM artist")
        let track = tracks.randomElement(using: &random) ?? 0
        let album = albums.randomElement(using: &random) ?? 0
        let artist = artists.randomElement(using: &random) ?? 0
        switch Int.random(in: 0..<30, using: &random) {
        case 0, 1: try insertTrack(db, &random)
        case 2: try db.execute(sql: "DELETE FROM track WHERE id = ?", arguments: [track])
        case 3: try db.execute(sql: "UPDATE track SET title = \(pick(names, &random)) WHERE id = ?", arguments: [track])
        case 4: try db.execute(sql: "UPDATE track SET rank = \(rank(&random)) WHERE id = ?", arguments: [track])
        case 5:   // a foreign key that changes, to another album, a missing one or NULL
            let target = Int.random(in: 0..<5, using: &random) == 0 ? "NULL" : String(Int.random(in: 1...13, using: &random))
            try db.execute(sql: "UPDATE track SET album_id = \(target) WHERE id = ?", arguments: [track])
        case 6: try db.execute(sql: "UPDATE track SET flag = 1 - flag WHERE id = ?", arguments: [track])
        case 7, 8:   // a rename of a joined row: every track of the album moves
            try db.execute(sql: "UPDATE album SET title = \(pick(names, &random)) WHERE id = ?", arguments: [album])
        case 9, 10: try db.execute(sql: "UPDATE artist SET name = \(pick(names, &random)) WHERE id = ?", arguments: [artist])
        case 11:   // a joined row deleted: its tracks leave an inner join, keep NULLs in a left join
            try db.execute(sql: "DELETE FROM album WHERE id = ?", arguments: [album])
        case 12: try db.execute(sql: "DELETE FROM artist WHERE id = ?", arguments: [artist])   // albums' artist_id set NULL
        case 13, 24, 27:   // a joined row inserted: tracks that referenced a missing album now meet it
            try db.execute(sql: "INSERT OR IGNORE INTO album(id, title, artist_id, uuid, year) VALUES (?, \(pick(names, &random)), ?, randomblob(16), 1999)",
                           arguments: [Int.random(in: 1...13, using: &random), artists.randomElement(using: &random)])
        case 14: try db.execute(sql: "INSERT OR IGNORE INTO artist(id, name, code) VALUES (?, \(pick(names, &random)), ?)",
                                arguments: [Int.random(in: 1...7, using: &random), "a\(Int.random(in: 0...9, using: &random))"])
        case 15:   // an album moves to another artist
            try db.execute(sql: "UPDATE album SET artist_id = ? WHERE id = ?", arguments: [artists.randomElement(using: &random), album])
        case 16:   // a joined row's key changes: its tracks no longer meet it (no ON UPDATE action)
            try db.execute(sql: "UPDATE OR IGNORE album SET id = ? WHERE id = ?", arguments: [Int.random(in: 1...13, using: &random), album])
        case 17:   // REPLACE on a joined table over another row's unique code: that artist is deleted silently
            try db.execute(sql: "INSERT OR REPLACE INTO artist(id, name, code) VALUES (?, \(pick(names, &random)), ?)",
                           arguments: [Int.random(in: 1...9, using: &random), "a\(Int.random(in: 1...5, using: &random))"])
        case 18:   // REPLACE INTO over an existing album id
            try db.execute(sql: "REPLACE INTO album(id, title, artist_id, uuid, year) VALUES (?, \(pick(names, &random)), ?, randomblob(16), 2000)",
                           arguments: [album, artists.randomElement(using: &random)])
        case 19: try db.execute(sql: "UPDATE album SET year = year + 1 WHERE id = ?", arguments: [album])
        case 25:   // REPLACE over another album's unique uuid under a new id: that album goes silently
            try db.execute(sql: "INSERT OR REPLACE INTO album(id, title, artist_id, uuid, year) SELECT ?, \(pick(names, &random)), artist_id, uuid, 2001 FROM album WHERE id = ?",
                           arguments: [Int.random(in: 1...13, using: &random), album])
        case 26:   // UPDATE OR REPLACE onto another album's uuid
            try db.execute(sql: "UPDATE OR REPLACE album SET uuid = (SELECT uuid FROM album WHERE id = ?) WHERE id = ?",
                           arguments: [albums.randomElement(using: &random), album])
        case 20: try insertTrack(db, &random, verb: "INSERT OR REPLACE")
        case 21:   // a track's rowid changes
            try db.execute(sql: "UPDATE OR IGNORE track SET id = ? WHERE id = ?", arguments: [(tracks.max() ?? 0) + 1, track])
        case 22:   // many joined rows at once
            try db.execute(sql: "UPDATE album SET title = \(pick(names, &random)) WHERE id % 2 = ?", arguments: [Int.random(in: 0...1, using: &random)])
        case 23: try db.execute(sql: "UPDATE track SET uuid = \(uuidText(&random)) WHERE id = ?", arguments: [track])
        default: try insertTrack(db, &random, verb: "INSERT OR IGNORE")
        }
    }
}
