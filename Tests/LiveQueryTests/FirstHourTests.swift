import Foundation
import GRDB
import ListDiff
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// The first hour of a GRDB/UIKit developer (issue 17): each finding of that review, as a test
/// that failed on the code it was written against.
@Suite(.timeLimit(.minutes(2)))
struct FirstHourTests {
    static func queue(_ sql: String) async throws -> DatabaseQueue {
        let queue = try DatabaseQueue(path: try TestDatabase.path(), configuration: TestDatabase.patient)
        try await queue.write { db in try db.execute(sql: sql) }
        return queue
    }

    static let uuidTable = """
        CREATE TABLE t(id INTEGER PRIMARY KEY, uuid TEXT UNIQUE, name TEXT);
        INSERT INTO t VALUES (1, '6F9619FF-8B86-D011-B42D-00C04FC964FF', 'a'), (2, '0E984725-C51C-4BF4-9960-E1C80E27ABA0', 'b');
        """

    // Finding 1: a silently short list.

    @Test("an identity type that cannot hold the column's values fails at open, naming the storage class and the type to declare")
    func identityTypeMismatch() async throws {
        let queue = try await Self.queue(Self.uuidTable)
        do {
            _ = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM t ORDER BY name", identity: "uuid", as: Int64.self), in: queue,
                                         options: .init(dataVersionPollInterval: nil))
            Issue.record("expected an identity type mismatch")
        } catch {
            guard case let .invalidRequest(.identityTypeMismatch(identity, found, examples, declared)) = error else { throw error }
            #expect(identity == "uuid" && found == .text && declared == "Int64" && examples.count == 2)
            #expect(error.description.contains("TEXT") && error.description.contains("as: String.self"), "\(error)")
        }
        // A NULL among valid values is one row left out, not a wrong type.
        try await queue.write { db in try db.execute(sql: "INSERT INTO t VALUES (3, NULL, 'c')") }
        let query = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM t ORDER BY name", identity: "uuid", as: UUID.self), in: queue,
                                             options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        #expect(query.latestResult.count == 2 && query.latestResult.leftOut.invalidIdentities.count == 1)
    }

    @Test("explain throws what open throws for an identity type that cannot hold the values; 16-byte blobs are told UUID")
    func explainChecksTheIdentityType() async throws {
        let queue = try await Self.queue(Self.uuidTable + """
            CREATE TABLE b(id BLOB PRIMARY KEY, name TEXT);
            INSERT INTO b VALUES (x'6F9619FF8B86D011B42D00C04FC964FF', 'a'), (x'0E984725C51C4BF49960E1C80E27ABA0', 'b');
            """)
        do {
            _ = try await LiveQuery.explain(LiveQueryRequest(sql: "SELECT * FROM t ORDER BY name", identity: "uuid", as: Int64.self), in: queue)
            Issue.record("expected explain to fail as open does")
        } catch {
            guard case .invalidRequest(.identityTypeMismatch(_, .text, _, "Int64")) = error else { throw error }
            #expect(error.description.contains("String.self, or UUID.self"), "\(error)")
        }
        do {
            _ = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM b ORDER BY name", identity: "id", as: Int64.self), in: queue,
                                         options: .init(dataVersionPollInterval: nil))
            Issue.record("expected an identity type mismatch")
        } catch {
            guard case .invalidRequest(.identityTypeMismatch(_, .blob, _, "Int64")) = error else { throw error }
            #expect(error.description.contains("declare as: UUID.self"), "\(error)")
        }
        let explanation = try await LiveQuery.explain(LiveQueryRequest(sql: "SELECT * FROM b ORDER BY name", identity: "id", as: UUID.self), in: queue)
        #expect(explanation.path == .incremental)
    }

    @Test("a GROUP BY with a non-unique identity: every result says how many rows it leaves out, a late subscriber too, and no failure per row")
    func leftOutRowsAreState() async throws {
        var sql = "CREATE TABLE sale(id INTEGER PRIMARY KEY, region TEXT, amount INTEGER);"
        for index in 0..<200 { sql += "INSERT INTO sale(region, amount) VALUES ('r\(index % 10)', \(index));" }
        let queue = try await Self.queue(sql)
        let log = EventLog<String>()
        let request = LiveQueryRequest(sql: "SELECT region, amount FROM sale GROUP BY region, amount ORDER BY amount", identity: "region", as: String.self)
        let explanation = try await LiveQuery.explain(request, in: queue)
        #expect(explanation.path != .incremental)
        let query = try await LiveQuery.open(request, in: queue, options: .init(dataVersionPollInterval: nil), callbackQueue: nil,
                                             onEvent: { log.append($0) })
        defer { query.cancel() }
        #expect(query.latestResult.count == 10)
        #expect(query.latestResult.leftOut.duplicateIdentities.count == 190 && query.latestResult.leftOut.count == 190)
        #expect(query.latestResult.leftOut.duplicateIdentities.examples.count == LeftOutRows.exampleLimit)
        #expect(query.latestResult.leftOut.description.contains("190 rows"), "\(query.latestResult.leftOut)")
        // A consumer that subscribes later sees the same state in its first event.
        guard case let .initial(late) = try await nextEvent(query.events, skippingInitial: false) else {
            Issue.record("expected .initial first")
            return
        }
        #expect(late.leftOut.count == 190)
        try await queue.write { db in try db.execute(sql: "UPDATE sale SET amount = amount + 1000 WHERE id = 1") }
        let failures = log.drain().filter { if case .failure = $0 { true } else { false } }
        #expect(failures.isEmpty, "rows left out are not failures: \(failures.count)")
    }

    // Finding 2: accepted, then failing later.

    @Test("including(all:) is refused by explain and by open, with the case that says what to do")
    func includingAllIsRefused() async throws {
        let pool = try await GRDBRequestTests.library()
        let request = LiveQueryRequest(Album.including(all: Album.tracks).order(Column("title")), identity: "album.id", as: Int64.self)
        for attempt in ["explain", "open"] {
            do {
                if attempt == "explain" {
                    _ = try await LiveQuery.explain(request, in: pool)
                } else {
                    _ = try await LiveQuery.open(request, in: pool, options: .init(dataVersionPollInterval: nil))
                }
                Issue.record("\(attempt) accepted including(all:)")
            } catch {
                guard case .invalidRequest(.prefetchesToMany) = error else { throw error }
                #expect(error.description.contains("including(all:)"))
            }
        }
        // The same request without the prefetch opens.
        let plain = try await LiveQuery.open(LiveQueryRequest(Album.order(Column("title")), identity: "album.id", as: Int64.self), in: pool,
                                             options: .init(dataVersionPollInterval: nil))
        plain.cancel()
    }

    @Test("explain's verdict is what opening and following the request does, for every shape", arguments: [
        ("SELECT * FROM track ORDER BY title", true),
        ("SELECT track.* FROM track JOIN album ON album.id = track.album_id ORDER BY album.title, track.title", true),
        ("SELECT track.* FROM track LEFT JOIN album ON album.id = track.album_id WHERE album.title IS NOT 'Blue' ORDER BY track.title", true),
        ("SELECT * FROM track ORDER BY length(title)", false),
        ("SELECT * FROM track ORDER BY title LIMIT 5", false),
        ("SELECT DISTINCT track.* FROM track ORDER BY title", false),
        ("SELECT * FROM track WHERE title > (SELECT min(title) FROM track) ORDER BY title", false),
        ("SELECT * FROM track WHERE random() >= 0 ORDER BY title", false),
    ])
    func explainMatchesFollowing(sql: String, incremental: Bool) async throws {
        let pool = try await GRDBRequestTests.library()
        let request = LiveQueryRequest(sql: sql)
        let explanation = try await LiveQuery.explain(request, in: pool)
        #expect((explanation.path == .incremental) == incremental, "\(explanation)")
        let query = try await LiveQuery.open(request, in: pool, options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        #expect(query.mode == explanation.path)
        let events = query.events
        try await pool.write { db in try db.execute(sql: "UPDATE track SET title = title || '!' WHERE id = 2") }
        let update = try await nextUpdate(events)
        #expect((update.path == .incremental) == incremental, "\(update.path)")
    }

    // Finding 3: a first result that is not the result.

    @Test("a 20k-row query is complete at .initial; a larger one says it is not, and tells 'not yet known' from 'not in the result'")
    func firstResultMeansWhatItSays() async throws {
        let queue = try await Self.queue("CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) INSERT INTO n SELECT x, x FROM c")
        let request = LiveQueryRequest(table: "n", sort: [SortTerm("v")])
        let whole = try await LiveQuery.open(request, in: queue, options: .init(dataVersionPollInterval: nil))
        #expect(whole.initialResult.isComplete && whole.initialResult.count == 20_000)
        #expect(whole.initialResult.location(of: 19_999) == .at(ItemPath(section: 0, item: 19_998)))
        #expect(whole.initialResult.location(of: 30_000) == .notInResult)
        whole.cancel()

        let partial = try await LiveQuery.open(request, in: queue, options: .init(dataVersionPollInterval: nil, firstScreenRows: 100, wholeResultRows: 1_000))
        defer { partial.cancel() }
        let first = partial.initialResult
        #expect(!first.isComplete && first.count == 100)
        #expect(first.location(of: 50) == .at(ItemPath(section: 0, item: 49)))
        #expect(first.location(of: 19_999) == .notYetKnown && first.location(of: 30_000) == .notYetKnown)
        let complete = try await withTimeLimit { await partial.completeResult() }
        #expect(complete.isComplete && complete.count == 20_000 && complete.location(of: 19_999) == .at(ItemPath(section: 0, item: 19_998)))
    }

    // Finding 7: hard to find — waiting for a write, `.initial` on the main actor.

    @MainActor
    @Test("the main-actor callback receives .initial first; upToDate() reflects this connection's and another connection's writes")
    func initialAndUpToDate() async throws {
        let path = try TestDatabase.path()
        let pool = try DatabasePool(path: path, configuration: TestDatabase.patient)
        try await pool.write { db in try db.execute(sql: Self.uuidTable) }
        @MainActor final class Received {
            var kinds: [String] = []
        }
        let received = Received()
        let query = try await LiveQuery.open(LiveQueryRequest(table: "t", sort: [SortTerm("name")]), in: pool,
                                             options: .init(dataVersionPollInterval: nil, watchesFiles: false), onMainActor: { event in
            switch event {
            case .initial: received.kinds.append("initial")
            case .update: received.kinds.append("update")
            case .failure: received.kinds.append("failure")
            }
        })
        defer { query.cancel() }
        try await pool.write { db in try db.execute(sql: "INSERT INTO t VALUES (3, NULL, '0')") }
        let mine = try await withTimeLimit { try await query.upToDate() }
        #expect(mine.count == 3 && mine.position(of: 3) == 0)
        // Another connection (nothing watches the files, nothing polls): upToDate looks for it.
        let other = try DatabaseQueue(path: path, configuration: TestDatabase.patient)
        try await other.write { db in try db.execute(sql: "DELETE FROM t WHERE id = 1") }
        let theirs = try await withTimeLimit { try await query.upToDate() }
        #expect(theirs.count == 2 && theirs.position(of: 1) == nil)
        for _ in 0..<1_000 where received.kinds.count < 3 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(received.kinds == ["initial", "update", "update"])
    }

    // Finding 8: a left-out row never comes back.

    @Test("a row left out for a duplicate identity enters the list when the row holding it is deleted")
    func leftOutRowComesBack() async throws {
        let queue = try await Self.queue(Self.uuidTable)
        let query = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM t ORDER BY name", identity: "uuid", as: UUID.self), in: queue,
                                             options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        let events = query.events
        try await queue.write { db in try db.execute(sql: "INSERT INTO t VALUES (3, '6f9619ff-8b86-d011-b42d-00c04fc964ff', 'c')") }
        let added = try await nextUpdate(events)
        #expect(added.result.count == 2 && added.result.leftOut.duplicateIdentities.count == 1, "the same UUID in lower case")
        #expect(added.changeset.changes.isEmpty, "nothing entered the list; the result still says what it left out")
        try await queue.write { db in try db.execute(sql: "DELETE FROM t WHERE id = 1") }
        let back = try await nextUpdate(events)
        #expect(back.result.leftOut.isEmpty)
        #expect(back.result.rows(in: 0..<2).map(\.id) == [UUID(uuidString: "0E984725-C51C-4BF4-9960-E1C80E27ABA0"),
                                                         UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")])
        // The list's item for that UUID is now row 3: it moves below row 2 and shows row 3's content.
        #expect(back.changeset.changes.itemMoves == [Move(from: ItemPath(section: 0, item: 0), to: ItemPath(section: 0, item: 1))], "\(back.changeset.changes)")
        #expect(back.changeset.changes.itemReloads == [ItemPath(section: 0, item: 0)], "\(back.changeset.changes)")
    }

    @Test("500 NULL identities are one count, not 500 events at open and 500 more per external commit")
    func invalidIdentitiesAreCounted() async throws {
        let path = try TestDatabase.path()
        let queue = try DatabaseQueue(path: path, configuration: TestDatabase.patient)
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, uuid TEXT UNIQUE, name TEXT)")
            for index in 0..<500 { try db.execute(sql: "INSERT INTO t VALUES (?, NULL, 'n')", arguments: [index + 1]) }
            try db.execute(sql: "INSERT INTO t VALUES (1000, '0E984725-C51C-4BF4-9960-E1C80E27ABA0', 'z')")
        }
        let log = EventLog<UUID>()
        let query = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT * FROM t ORDER BY name", identity: "uuid", as: UUID.self), in: queue,
                                             options: .init(dataVersionPollInterval: nil, followsChangeLog: false, watchesFiles: false),
                                             callbackQueue: nil, onEvent: { log.append($0) })
        defer { query.cancel() }
        #expect(query.latestResult.count == 1 && query.latestResult.leftOut.invalidIdentities.count == 500)
        let other = try DatabaseQueue(path: path, configuration: TestDatabase.patient)
        for round in 0..<3 {
            try await other.write { db in try db.execute(sql: "UPDATE t SET name = ? WHERE id = 1000", arguments: ["z\(round)"]) }
            try await query.checkForExternalChanges()
        }
        let events = log.drain()
        #expect(events.allSatisfy { if case .update = $0 { true } else { false } } && events.count == 3, "\(events.count) events")
        #expect(query.latestResult.leftOut.invalidIdentities.count == 500)
    }

    // Item 4: identity and section as GRDB column expressions.

    @Test("identity and section given as GRDB expressions of aliased tables, named or not, plan and follow like their text")
    func expressionIdentityAndSection() async throws {
        for named in [true, false] {
            let pool = try await GRDBRequestTests.library()
            let tracks = named ? TableAlias(name: "t") : TableAlias()
            let albums = named ? TableAlias(name: "a") : TableAlias()
            let request = LiveQueryRequest(
                Track.aliased(tracks).including(required: Track.album.aliased(albums)).order(albums[Column("title")], tracks[Column("title")]),
                identity: tracks[Column("uuid")], as: UUID.self, section: albums[Column("title")])
            let query = try await LiveQuery.open(request, in: pool, options: .init(dataVersionPollInterval: nil))
            defer { query.cancel() }
            #expect(query.mode == .incremental)
            let result = query.latestResult
            #expect(result.count == 9 && result.sectionCount == 3 && result.sectionName(at: 0) == "Blue", "\(result.sectionName(at: 0))")
            let events = query.events
            try await pool.write { db in try db.execute(sql: "UPDATE album SET title = 'Aaa' WHERE id = 2") }
            let update = try await nextUpdate(events)
            #expect(update.path == .incremental && update.result.sectionName(at: 0) == "Aaa")
        }
    }

    // Finding 9: misleading messages.

    @Test("a section typo names the column that does not exist; a rowid identity named with the wrong type names it")
    func messagesSayWhatToDo() async throws {
        let pool = try await GRDBRequestTests.library()
        do {
            _ = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT track.* FROM track JOIN album ON album.id = track.album_id ORDER BY album.title, track.title",
                                                          section: "album.titel"), in: pool)
            Issue.record("expected an error")
        } catch {
            guard case let .invalidRequest(.noSuchColumn(role, name, available)) = error else { throw error }
            #expect(role == .section && name == "album.titel" && available.contains("album.title"))
        }
        do {
            _ = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT track.* FROM track JOIN album ON album.id = track.album_id ORDER BY track.title, album.title",
                                                          section: "album.title"), in: pool)
            Issue.record("expected an error")
        } catch {
            guard case let .invalidRequest(.sectionNotFirstSortTerm(section, firstTerm)) = error else { throw error }
            #expect(section == "album.title" && firstTerm == "track.title")
        }
        do {
            _ = try await LiveQuery.open(LiveQueryRequest(Album.order(Column("title")), identity: "album.id", as: UUID.self), in: pool)
            Issue.record("expected an error")
        } catch {
            guard case let .invalidRequest(.integerIdentity(named, table, declared)) = error else { throw error }
            #expect(named == "album.id" && table == "album" && declared == "UUID")
            #expect(error.description.contains("the identity album.id") && error.description.contains("as: Int64.self"), "\(error)")
        }
    }
}
