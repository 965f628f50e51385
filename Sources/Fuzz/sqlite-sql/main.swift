import Dispatch
import FuzzSupport
import GRDB
import GRDBSQLite
import LiveQuery

// A published query as the SQLite engine reads it from configuration: the SELECT, and the
// columns named as its identity, section and version — tokenized, parsed and planned against a
// real schema (a music library: artists, albums, tracks), its result read once
// (`LiveQuery.explain`, what `open` does before following it). Whatever the text, the answer is a
// plan or a typed `LiveQueryError`, never a crash.
//
// An input is the SELECT on its first line, then the identity, the section and the version on the
// next lines (absent or empty: none); a line may hold `\n` as two characters for a newline.

/// Stops a statement after about ten million of SQLite's virtual machine steps: a query that
/// runs away (a recursive CTE without end) is configuration's to fix, not the fuzzer's to wait for.
nonisolated(unsafe) var progressCalls = 0

/// SQLite's progress handler, called on the database's queue: not the main actor's.
nonisolated func progress(_: UnsafeMutableRawPointer?) -> Int32 {
    progressCalls += 1
    return progressCalls > 10_000 ? 1 : 0
}

let database: DatabaseQueue = {
    do {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE artist(id INTEGER PRIMARY KEY, name TEXT COLLATE NOCASE, code TEXT UNIQUE);
                CREATE TABLE album(id INTEGER PRIMARY KEY, title TEXT, artist_id INTEGER REFERENCES artist(id) ON DELETE SET NULL,
                                   uuid BLOB UNIQUE, year);
                CREATE INDEX album_artist ON album(artist_id);
                CREATE TABLE track(id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, title TEXT, album_id INTEGER, rank,
                                   flag INTEGER NOT NULL DEFAULT 1, version INTEGER NOT NULL DEFAULT 0);
                CREATE INDEX track_album ON track(album_id);
                CREATE TABLE tag(key TEXT PRIMARY KEY, label TEXT) WITHOUT ROWID;
                CREATE VIEW long_track AS SELECT * FROM track WHERE rank > 2;
                INSERT INTO artist VALUES (1, 'Alpha', 'a'), (2, 'beta', 'b'), (3, 'Zoë', NULL);
                INSERT INTO album VALUES (1, 'One', 1, X'01', 1999), (2, 'Two', 2, X'02', '2001'), (3, NULL, NULL, NULL, 2.5);
                INSERT INTO track (id, uuid, title, album_id, rank) VALUES
                    (1, 'u1', 'a', 1, 1), (2, 'u2', 'B', 1, 2.5), (3, 'u3', 'é', 2, 'x'), (4, 'u4', NULL, 3, NULL), (5, 'u5', 'a' || char(0), 9, 3);
                INSERT INTO tag VALUES ('k1', 'one'), ('k2', NULL);
                """)
        }
        queue.inDatabase { db in sqlite3_progress_handler(db.sqliteConnection, 1_000, progress, nil) }
        return queue
    } catch {
        fatalError("the fuzz target's database: \(error)")
    }
}()

FuzzTarget.main { bytes in
    var lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        .map { $0.replacingOccurrences(of: "\\n", with: "\n") }
    while lines.count < 4 { lines.append("") }
    func optional(_ text: String) -> String? { text.isEmpty ? nil : text }
    let request = LiveQueryRequest(sql: lines[0], identity: optional(lines[1]), as: SQLValue.self, section: optional(lines[2]),
                                   version: optional(lines[3]))
    progressCalls = 0
    let statement = lines[0]
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do {
            _ = try await LiveQuery.explain(request, in: database)
        } catch {
            precondition(!"\(error)".isEmpty)
        }
        // The same text as a mutation's statement: its effect stated, or the reason it is not.
        do {
            let effects = try await database.read { db in
                try SQLiteMutationEffects.effects(of: [statement], parameters: ["id": [.integer], "t": [.text], "any": Set(SQLStorageClass.allCases)], in: db)
            }
            if case let .unstated(reason) = effects { precondition(!reason.description.isEmpty) }
        } catch {
            precondition(!"\(error)".isEmpty)
        }
        done.signal()
    }
    done.wait()
}
