import Foundation
import GRDB
import ListDiff
import ListTesting
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// Other processes' commits, read from the change log: incremental, exact, not applied twice,
/// bounded, and loud when the log is broken.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ChangeTrackingTests {
    static let tracked = ["track", "album", "artist"]

    /// Waits for another process's write lock instead of failing at once.
    static var busyTolerant: Configuration {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        return configuration
    }

    /// The row ids of `SELECT * FROM track ORDER BY title` as a fresh query returns them.
    static func tracksByTitle(_ pool: DatabasePool) async throws -> [Int64] {
        try await pool.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM track ORDER BY title, id") }
    }

    /// A tracked music library on disk, in WAL mode (as a pool opens it).
    static func library(seed: UInt64) async throws -> (DatabasePool, String) {
        let path = try TestDatabase.path()
        let pool = try DatabasePool(path: path, configuration: busyTolerant)
        try await pool.write { db in
            try db.execute(sql: MusicDatabase.schema)
            var random = SeededRandomNumberGenerator(seed: seed)
            try MusicDatabase.populate(db, &random)
            try ChangeTracking.install(on: db, tables: tracked)
        }
        return (pool, path)
    }

    /// One statement of another process's transaction, chosen by `random` and written so that
    /// the same choices give the same statement (rows are picked by position).
    static func externalStatement(_ random: inout SeededRandomNumberGenerator) -> String {
        let k = Int.random(in: 0..<1_000, using: &random)
        func pickTrack() -> String { "(SELECT id FROM track ORDER BY id LIMIT 1 OFFSET \(k) % max(1, (SELECT count(*) FROM track)))" }
        func pickAlbum() -> String { "(SELECT id FROM album ORDER BY id LIMIT 1 OFFSET \(k) % max(1, (SELECT count(*) FROM album)))" }
        let name = MusicDatabase.pick(MusicDatabase.names, &random)
        switch Int.random(in: 0..<14, using: &random) {
        case 0, 1:
            let album = Int.random(in: 0..<6, using: &random) == 0 ? "NULL" : String(Int.random(in: 1...13, using: &random))
            return "INSERT INTO track(uuid, title, album_id, rank, flag) VALUES (\(MusicDatabase.uuidText(&random)), \(name), \(album), \(MusicDatabase.rank(&random)), 1);"
        case 2: return "UPDATE track SET title = \(name) WHERE id = \(pickTrack());"
        case 3: return "UPDATE track SET rank = \(MusicDatabase.rank(&random)) WHERE id = \(pickTrack());"
        case 4: return "UPDATE track SET album_id = \(Int.random(in: 1...13, using: &random)) WHERE id = \(pickTrack());"
        case 5: return "DELETE FROM track WHERE id = \(pickTrack());"
        case 6, 7: return "UPDATE album SET title = \(name) WHERE id = \(pickAlbum());"   // its tracks move
        case 8: return "UPDATE artist SET name = \(name) WHERE id = \(Int.random(in: 1...7, using: &random));"
        case 9: return "DELETE FROM album WHERE id = \(pickAlbum());"
        case 10: return "INSERT OR IGNORE INTO album(id, title, artist_id, uuid) VALUES (\(Int.random(in: 1...13, using: &random)), \(name), \(Int.random(in: 1...5, using: &random)), randomblob(16));"
        case 11: return "INSERT OR REPLACE INTO album(id, title, artist_id, uuid, year) SELECT \(Int.random(in: 1...13, using: &random)), \(name), artist_id, uuid, 2001 FROM album WHERE id = \(pickAlbum());"
        case 12: return "UPDATE OR IGNORE track SET id = (SELECT max(id) + 1 FROM track) WHERE id = \(pickTrack());"
        default: return "UPDATE album SET title = \(name) WHERE id % 2 = \(k % 2);"   // many rows at once
        }
    }

    @Test("oracle: another process's transactions and this connection's, at once; the view equals a fresh SELECT at every quiet point",
          arguments: [0, 1])
    func oracle(scenarioIndex: Int) async throws {
        let scenario = SelectQueryOracleTests.scenarios[scenarioIndex]
        let seed: UInt64 = 0xC4A9_6E00 &+ UInt64(scenarioIndex)
        print("ChangeTrackingTests.oracle(\(scenario.name)): seed \(seed)")
        var random = SeededRandomNumberGenerator(seed: seed)
        let (pool, path) = try await Self.library(seed: random.next())
        let request: LiveQueryRequest<String> = LiveQueryRequest(sql: scenario.sql, arguments: scenario.arguments,
                                                                 identity: scenario.identity ?? "track.uuid", as: String.self, section: scenario.section)
        let oracleScenario = {
            var copy = scenario
            if scenario.identity == nil {
                // Identified by uuid here: the uuid, not the rowid, breaks ties.
                copy.oracle = scenario.oracle.replacingOccurrences(of: "track.id AS oid", with: "track.uuid AS oid")
                    .replacingOccurrences(of: "track.title, track.id", with: "track.title, track.uuid COLLATE BINARY")
            }
            return copy
        }()
        let log = EventLog<String>()
        let query = try await LiveQuery.open(request, in: pool, options: .init(dataVersionPollInterval: nil, watchesFiles: false),
                                             callbackQueue: nil, onEvent: { log.append($0) })
        defer { query.cancel() }
        #expect(query.mode == .incremental && query.notes.isEmpty, "\(query.mode) \(query.notes)")
        let initial = try await pool.read { db in try SelectQueryOracleTests.oracle(db, oracleScenario) }
        let harness = await OracleHarness(query.initialResult, expected: initial)
        var external = 0, own = 0, rolledBack = 0, killed = 0, concurrentSteps = 0
        for step in 0..<60 {
            let choice = Int.random(in: 0..<10, using: &random)
            let statements = (0..<(Int.random(in: 0..<5, using: &random) == 0 ? 4 : 1)).map { _ in Self.externalStatement(&random) }
            let concurrent = Self.externalStatement(&random)
            let ownSeed = random.next()
            let writesOwn = choice >= 6
            // Another process and this connection write at the same time.
            async let other: Void = Task.detached {
                switch choice {
                case 0: try await ExternalProcess.run("BEGIN;\n" + statements.joined(separator: "\n") + "\nROLLBACK;", on: path)
                case 1: try await ExternalProcess.killMidTransaction(statements.joined(separator: "\n"), on: path)
                case 2, 3:
                    // Two writer processes at once, one of them checkpointing the WAL.
                    async let first: Void = Task.detached {
                        try await ExternalProcess.run("BEGIN;\n" + statements.joined(separator: "\n") + "\nCOMMIT;\nPRAGMA wal_checkpoint(TRUNCATE);", on: path)
                    }.value
                    try await ExternalProcess.run("BEGIN;\n\(concurrent)\nCOMMIT;", on: path)
                    try await first
                default: try await ExternalProcess.run("BEGIN;\n" + statements.joined(separator: "\n") + "\nCOMMIT;", on: path)
                }
            }.value
            if writesOwn {
                try await pool.write { db in
                    var random = SeededRandomNumberGenerator(seed: ownSeed)
                    for _ in 0..<2 { try MusicDatabase.randomOperation(db, &random) }
                }
                own += 1
            }
            try await other
            switch choice {
            case 0: rolledBack += 1
            case 1: killed += 1
            case 2, 3:
                external += 1
                concurrentSteps += 1
            default: external += 1
            }
            // The quiet point: look now (the file watcher is off, so nothing is missed silently).
            try await query.checkForExternalChanges()
            let expected = try await pool.read { db in try SelectQueryOracleTests.oracle(db, oracleScenario) }
            let failuresBefore = await harness.tally.failures.count
            try await MainActor.run {
                harness.expect(expected)
                try harness.apply(log.drain())
                _ = harness.check("seed \(seed), step \(step)")
            }
            let failures = await harness.tally.failures.dropFirst(failuresBefore)
            #expect(failures.isEmpty, "seed \(seed), step \(step): \(Array(failures))")
            // Nothing is applied twice: looking again finds nothing and reads nothing.
            let read = query.statistics.rowsRead
            try await query.checkForExternalChanges()
            #expect(log.drain().isEmpty && query.statistics.rowsRead == read, "seed \(seed), step \(step): a second look changed something")
        }
        let tally = await harness.tally
        #expect(tally.refetched == 0, "every commit, external or own, followed incrementally")
        #expect(tally.incremental > 0)
        print("ChangeTrackingTests.oracle(\(scenario.name)): \(external) external steps (\(concurrentSteps) with two writer processes at once), \(rolledBack) rolled back, \(killed) killed mid-transaction, \(own) own commits at the same time; \(tally.incremental) incremental updates")
    }

    @Test("this connection's commits are applied once, at their commit; another process's commit reads only its rows")
    func ownCommitsAreNotAppliedTwice() async throws {
        let (pool, path) = try await Self.library(seed: 3)
        let log = EventLog<Int64>()
        let query = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM track ORDER BY title"), in: pool,
                                             options: .init(dataVersionPollInterval: nil, watchesFiles: false), callbackQueue: nil,
                                             onEvent: { log.append($0) })
        defer { query.cancel() }
        try await pool.write { db in try db.execute(sql: "UPDATE track SET title = 'own' WHERE id IN (1, 2, 3)") }
        #expect(log.updates.count == 1)
        var read = query.statistics.rowsRead
        try await query.checkForExternalChanges()
        #expect(log.updates.isEmpty && query.statistics.rowsRead == read, "nothing new: the own commit's entries were passed")
        // Own and other commits interleaved in the log: only the other's rows are re-read.
        try await pool.write { db in try db.execute(sql: "UPDATE track SET title = 'own again' WHERE id IN (6, 7, 8)") }
        #expect(log.updates.count == 1)
        read = query.statistics.rowsRead
        try await ExternalProcess.run("UPDATE track SET title = 'other' WHERE id IN (4, 5);", on: path)
        try await query.checkForExternalChanges()
        let updates = log.updates
        #expect(updates.count == 1 && updates.first?.path == .incremental)
        #expect(query.statistics.rowsRead - read == 2, "only the two rows the other process touched were re-read")
        #expect(query.statistics.refetches == 0)
    }

    /// Whether `flaky(x)` fails: a read that fails while it is set, and succeeds again after.
    static let flakyFails = Locked(false)

    @Test("a query a failed read left behind is refetched by the next commit of another process, not re-read at that commit's rows")
    func behindRecoversAtAnotherProcessCommit() async throws {
        var configuration = Self.busyTolerant
        configuration.prepareDatabase { db in
            db.add(function: DatabaseFunction("flaky", argumentCount: 1, pure: true) { values in
                if Self.flakyFails.withLock({ $0 }) { throw DatabaseError(message: "flaky is failing") }
                return values[0]
            })
        }
        let path = try TestDatabase.path()
        let pool = try DatabasePool(path: path, configuration: configuration)
        try await pool.write { db in
            try db.execute(sql: MusicDatabase.schema)
            var random = SeededRandomNumberGenerator(seed: 11)
            try MusicDatabase.populate(db, &random)
            try ChangeTracking.install(on: db, tables: Self.tracked)
        }
        let log = EventLog<Int64>()
        let query = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM track WHERE flaky(id) > 0 ORDER BY title"), in: pool,
                                             options: .init(dataVersionPollInterval: nil, watchesFiles: false), callbackQueue: nil,
                                             onEvent: { log.append($0) })
        defer { query.cancel() }
        // This connection's commit moves track 1 to the end; its re-read fails.
        Self.flakyFails.withLock { $0 = true }
        try await pool.write { db in try db.execute(sql: "UPDATE track SET title = 'zzzz' WHERE id = 1") }
        Self.flakyFails.withLock { $0 = false }
        let failed = log.drain()
        #expect(failed.count == 1 && failed.allSatisfy { if case .failure = $0 { true } else { false } }, "\(failed)")
        // Another process's commit names track 2 alone: re-reading it would leave track 1 where it was.
        try await ExternalProcess.run("UPDATE track SET title = title || '!' WHERE id = 2;", on: path)
        try await query.checkForExternalChanges()
        let updates = log.updates
        #expect(updates.count == 1 && updates.first?.path == .refetch(reason: .recovering), "\(updates.map(\.path))")
        let expected = try await pool.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM track WHERE flaky(id) > 0 ORDER BY title, id") }
        #expect(query.latestResult.rows(in: 0..<query.latestResult.count).map(\.id) == expected)
    }

    @Test("a row another process moved to a new rowid, touched by this connection before the move is read: no duplicate is reported, the list stays exact",
          arguments: [true, false])
    func ownCommitAfterUnreadExternalRowidChange(followsLog: Bool) async throws {
        let (pool, path) = try await Self.library(seed: 8)
        let log = EventLog<String>()
        let request = LiveQueryRequest(sql: "SELECT * FROM track ORDER BY title", identity: "uuid", as: String.self)
        let query = try await LiveQuery.open(request, in: pool,
                                             options: .init(dataVersionPollInterval: nil, followsChangeLog: followsLog, watchesFiles: false),
                                             callbackQueue: nil, onEvent: { log.append($0) })
        defer { query.cancel() }
        let moved = try await pool.read { db in try Int64.fetchOne(db, sql: "SELECT min(id) FROM track") ?? 0 }
        let target = try await pool.read { db in try Int64.fetchOne(db, sql: "SELECT max(id) + 1000 FROM track") ?? 0 }
        // Another process gives the row a new rowid; nothing has looked at its commit yet.
        try await ExternalProcess.run("UPDATE track SET id = \(target) WHERE id = \(moved);", on: path)
        // This connection writes that row under its new rowid: its commit re-reads it.
        try await pool.write { db in try db.execute(sql: "UPDATE track SET title = 'own' WHERE id = ?", arguments: [target]) }
        try await query.checkForExternalChanges()
        let failures = log.drain().compactMap { if case let .failure(failure) = $0 { failure } else { nil } }
        #expect(failures.isEmpty, "the database never held two rows with one identity: \(failures)")
        let expected = try await pool.read { db in try String.fetchAll(db, sql: "SELECT uuid FROM track ORDER BY title, uuid") }
        #expect(query.latestResult.rows(in: 0..<query.latestResult.count).map(\.id) == expected)
    }

    @Test("the file watcher wakes the query: another process's commit arrives without polling")
    func fileWatcherWakes() async throws {
        let (pool, path) = try await Self.library(seed: 4)
        let query = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM track ORDER BY title"), in: pool,
                                             options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        let events = query.events
        try await ExternalProcess.run("UPDATE track SET title = 'zzz' WHERE id = 1;", on: path)
        let update = try await nextUpdate(events, seconds: 5)
        #expect(update.path == .incremental)
        #expect(update.result.rows(in: 0..<update.result.count).map(\.id) == (try await Self.tracksByTitle(pool)))
    }

    @Test("pruning: a vanished reader stops pinning the log after its expiry; a reader pruned past refetches once, then goes on incrementally")
    func pruning() async throws {
        let (pool, path) = try await Self.library(seed: 5)
        // A reader that vanished (a killed process): its position expired a second ago.
        try await pool.write { db in
            try db.execute(sql: "INSERT INTO livelist_change_reader(id, seq, expires) VALUES ('gone', 0, ?)", arguments: [Date().timeIntervalSince1970 - 1])
        }
        let slow = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM track ORDER BY title"), in: pool,
                                            options: .init(dataVersionPollInterval: nil, changeLogReaderExpiry: .milliseconds(300), watchesFiles: false))
        defer { slow.cancel() }
        let logged = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM livelist_change_log") ?? -1 }
        #expect(logged == 0, "opening recorded a position and pruned what only the vanished reader held")
        let readers = try await pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM livelist_change_reader") }
        #expect(!readers.contains("gone"))

        // `slow` stops looking; another connection's query keeps reading and pruning past it.
        let other = try DatabasePool(path: path, configuration: Self.busyTolerant)
        let fast = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM track ORDER BY title"), in: other,
                                            options: .init(dataVersionPollInterval: nil, changeLogReaderExpiry: .milliseconds(200), watchesFiles: false))
        defer { fast.cancel() }
        try await ExternalProcess.run("UPDATE track SET title = 'a' WHERE id = 1;", on: path)
        try await Task.sleep(for: .milliseconds(400))   // past both expiries
        try await ExternalProcess.run("UPDATE track SET title = 'b' WHERE id = 2;", on: path)
        try await fast.checkForExternalChanges()
        let remaining = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM livelist_change_log") ?? -1 }
        #expect(remaining == 0, "the log is pruned past the expired reader")

        let events = slow.events
        try await slow.checkForExternalChanges()
        let update = try await nextUpdate(events, seconds: 5)
        #expect(update.path == .refetch(reason: .anotherConnection(.changeLogPruned)), "\(update.path)")
        try await ExternalProcess.run("UPDATE track SET title = 'c' WHERE id = 3;", on: path)
        try await slow.checkForExternalChanges()
        let next = try await nextUpdate(events, seconds: 5)
        #expect(next.path == .incremental)
    }

    @Test("a log dropped or altered by hand: a typed failure and a reported refetch, never a stale list")
    func brokenLog() async throws {
        for damage in ["DROP TABLE livelist_change_log", "ALTER TABLE livelist_change_log RENAME COLUMN val TO value"] {
            let (pool, path) = try await Self.library(seed: 6)
            let log = EventLog<Int64>()
            let query = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM track ORDER BY title"), in: pool,
                                                 options: .init(dataVersionPollInterval: nil, watchesFiles: false), callbackQueue: nil,
                                                 onEvent: { log.append($0) })
            defer { query.cancel() }
            // Another process damages the log (its triggers then fail: it drops them too) and writes.
            try await ExternalProcess.run("""
                \(damage);
                DROP TRIGGER livelist_log_track_insert; DROP TRIGGER livelist_log_track_update; DROP TRIGGER livelist_log_track_updateold;
                DROP TRIGGER livelist_log_track_delete; DROP TRIGGER livelist_log_track_replace; DROP TRIGGER livelist_log_track_updatereplace;
                UPDATE track SET title = 'zzz' WHERE id = 1;
                """, on: path)
            try await query.checkForExternalChanges()
            let events = log.drain()
            let failed = events.contains { if case .failure(.changeLogUnavailable) = $0 { true } else { false } }
            let refetched = events.contains { if case let .update(update) = $0 { update.path != .incremental } else { false } }
            #expect(failed && refetched, "\(damage): \(events)")
            let shown = query.latestResult.rows(in: 0..<query.latestResult.count).map(\.id)
            #expect(shown == (try await Self.tracksByTitle(pool)), "\(damage): the list equals a fresh query")
            #expect(query.notes.contains { $0.contains("change log") }, "\(query.notes)")
        }
    }

    @Test("a log dropped by hand under its triggers: the failure names the tables whose writes now fail, and the remedy; uninstall is the way")
    func logDroppedUnderItsTriggers() async throws {
        let (pool, path) = try await Self.library(seed: 8)
        let log = EventLog<Int64>()
        let query = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM track ORDER BY title"), in: pool,
                                             options: .init(dataVersionPollInterval: nil, watchesFiles: false), callbackQueue: nil,
                                             onEvent: { log.append($0) })
        defer { query.cancel() }
        try await ExternalProcess.run("DROP TABLE livelist_change_log;", on: path)
        try await query.checkForExternalChanges()
        let reasons = log.drain().compactMap { event -> String? in
            if case let .failure(.changeLogUnavailable(reason)) = event { reason } else { nil }
        }
        #expect(reasons.contains { $0.contains("track") && $0.contains("every write") && $0.contains("ChangeTracking.uninstall") }, "\(reasons)")
        // Writes to the tracked tables fail, as the failure says, until the triggers go.
        await #expect(throws: (any Error).self) { try await pool.write { db in try db.execute(sql: "UPDATE track SET title = 'x' WHERE id = 1") } }
        try await pool.write { db in try ChangeTracking.uninstall(on: db) }
        try await pool.write { db in try db.execute(sql: "UPDATE track SET title = 'x' WHERE id = 1") }
        let expected = try await Self.tracksByTitle(pool)
        try await within("the list after the write", seconds: 10) {
            while query.latestResult.rows(in: 0..<query.latestResult.count).map(\.id) != expected { try await Task.sleep(for: .milliseconds(20)) }
        }
    }

    @Test("a table without triggers is refetched, said in the notes; a read-only connection follows the log without recording a position")
    func partialTrackingAndReadOnly() async throws {
        let (pool, path) = try await Self.library(seed: 7)
        try await pool.write { db in try ChangeTracking.uninstall(on: db, tables: ["album"]) }
        let joined = LiveQueryRequest(sql: "SELECT track.*, album.title FROM track JOIN album ON album.id = track.album_id ORDER BY album.title, track.title")
        let query = try await LiveQuery.open(joined, in: pool, options: .init(dataVersionPollInterval: nil, watchesFiles: false))
        defer { query.cancel() }
        #expect(query.notes.contains { $0.contains("album") && $0.contains("not tracked") }, "\(query.notes)")
        let events = query.events
        try await ExternalProcess.run("UPDATE album SET title = 'zzz' WHERE id = 1;", on: path)
        try await query.checkForExternalChanges()
        let update = try await nextUpdate(events, seconds: 5)
        #expect(update.path == .refetch(reason: .anotherConnection(.untrackedTables(["album"]))), "\(update.path)")

        var configuration = Configuration()
        configuration.readonly = true
        let reader = try DatabaseQueue(path: path, configuration: configuration)
        let readOnly = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM track ORDER BY title"), in: reader,
                                                options: .init(dataVersionPollInterval: nil, watchesFiles: false))
        defer { readOnly.cancel() }
        #expect(readOnly.notes.contains { $0.contains("read-only") }, "\(readOnly.notes)")
        let readOnlyEvents = readOnly.events
        try await ExternalProcess.run("UPDATE track SET title = 'zzzz' WHERE id = 2;", on: path)
        try await readOnly.checkForExternalChanges()
        let next = try await nextUpdate(readOnlyEvents, seconds: 5)
        #expect(next.path == .incremental)
    }

    @Test("VACUUM by another process (rowids renumbered) refetches once")
    func vacuum() async throws {
        let path = try TestDatabase.path()
        let pool = try DatabasePool(path: path)
        try await pool.write { db in
            try db.execute(sql: "CREATE TABLE note(body TEXT)")   // no INTEGER PRIMARY KEY: VACUUM may renumber
            for number in 0..<50 { try db.execute(sql: "INSERT INTO note(body) VALUES (?)", arguments: ["n\(number)"]) }
            try db.execute(sql: "DELETE FROM note WHERE rowid % 2 = 0")
            try ChangeTracking.install(on: db, tables: ["note"])
        }
        let query = try await LiveQuery.open(LiveQueryRequest(table: "note", sort: [SortTerm("body")]), in: pool,
                                             options: .init(dataVersionPollInterval: nil, watchesFiles: false))
        defer { query.cancel() }
        let events = query.events
        try await ExternalProcess.run("VACUUM;", on: path)
        try await query.checkForExternalChanges()
        let update = try await nextUpdate(events, seconds: 5)
        #expect(update.path == .refetch(reason: .schemaChanged), "\(update.path)")
        let rowids = try await pool.read { db in try Int64.fetchAll(db, sql: "SELECT rowid FROM note ORDER BY body, rowid") }
        #expect(query.latestResult.rows(in: 0..<query.latestResult.count).map(\.id) == rowids)
    }
}
