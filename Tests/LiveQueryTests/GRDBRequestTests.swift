import Foundation
import GRDB
import ListDiff
import ListTesting
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

struct Artist: Codable, FetchableRecord, TableRecord, Sendable {
    var id: Int64
    var name: String?
}

struct Album: Codable, FetchableRecord, TableRecord, Sendable {
    static let artist = belongsTo(Artist.self, using: ForeignKey(["artist_id"]))
    static let tracks = hasMany(Track.self, using: ForeignKey(["album_id"]))
    var id: Int64
    var title: String?
    var artist_id: Int64?
}

struct Track: Codable, FetchableRecord, TableRecord, Sendable {
    static let album = belongsTo(Album.self, using: ForeignKey(["album_id"]))
    var id: Int64
    var uuid: String
    var title: String?
    var album_id: Int64?
}

/// A track with its album, as `including(required:)` decodes it.
struct TrackInfo: Decodable, FetchableRecord, Sendable {
    var track: Track
    var album: Album
}

/// A track with its album if it has one (`including(optional:)`).
struct TrackWithOptionalAlbum: Decodable, FetchableRecord, Sendable {
    var track: Track
    var album: Album?
}

/// GRDB requests — `QueryInterfaceRequest` with associations, `SQLRequest` — as live queries:
/// incremental when their joins are to-one, identified by UUID, their records loaded through
/// the row cache with the request's own adapter; bad requests rejected with a clear error.
@Suite(.timeLimit(.minutes(3)))
struct GRDBRequestTests {
    static let albumAlias = TableAlias(name: "a")

    /// 3 albums, 12 tracks with clean, distinct titles (records decode them as `String`).
    static func library() async throws -> DatabasePool {
        let pool = try DatabasePool(path: try TestDatabase.path())
        try await pool.write { db in
            try db.execute(sql: MusicDatabase.schema)
            try db.execute(sql: "INSERT INTO artist(id, name, code) VALUES (1, 'Nina', 'n'), (2, 'Miles', 'm')")
            try db.execute(sql: "INSERT INTO album(id, title, artist_id) VALUES (1, 'Blue', 2), (2, 'Pastel', 1), (3, 'Kind', 2)")
            for number in 0..<12 {
                try db.execute(sql: "INSERT INTO track(uuid, title, album_id) VALUES (?, ?, ?)",
                               arguments: [UUID().uuidString, "t\(String(format: "%02d", number))", number % 4 == 3 ? nil : number % 3 + 1])
            }
        }
        return pool
    }

    static let tracksByAlbum = Track.including(required: Track.album.aliased(albumAlias)).order(albumAlias[Column("title")], Column("title"))

    /// The uuids GRDB itself fetches for `request`, in its order.
    static func expected(_ pool: DatabasePool, _ request: QueryInterfaceRequest<Track>) async throws -> [UUID] {
        try await pool.read { db in try Track.fetchAll(db, request).compactMap { UUID(uuidString: $0.uuid) } }
    }

    static func ids(_ result: LiveResult<UUID>) -> [UUID] { result.rows(in: 0..<result.count).map(\.id) }

    @Test("a QueryInterfaceRequest with a to-one association is incremental, identified by UUID, and follows joined renames")
    func associationRequest() async throws {
        let pool = try await Self.library()
        let query = try await LiveQuery.open(LiveQueryRequest(Self.tracksByAlbum, identity: "track.uuid", as: UUID.self), in: pool,
                                             options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        #expect(query.mode == .incremental, "\(query.mode)")
        #expect(Self.ids(query.latestResult) == (try await Self.expected(pool, Self.tracksByAlbum)))

        let events = query.events
        var iterator = events.makeAsyncIterator()
        _ = await iterator.next()   // .initial
        // Renaming an album moves its four tracks, and re-reads only them.
        let before = query.statistics.rowsRead
        try await pool.write { db in try db.execute(sql: "UPDATE album SET title = 'Zebra' WHERE id = 1") }
        guard case let .update(update)? = await iterator.next() else { Issue.record("no update"); return }
        #expect(update.path == .incremental)
        #expect(update.changeset.changes.itemMoves.count == 3, "the album's three tracks move to the end")
        #expect(query.statistics.rowsRead - before == 3, "rows re-read for a rename of a joined row")
        #expect(Self.ids(update.result) == (try await Self.expected(pool, Self.tracksByAlbum)))

        // A track moved to another album, and an album deleted: its tracks leave the inner join.
        try await pool.write { db in
            try db.execute(sql: "UPDATE track SET album_id = 3 WHERE title = 't00'")
            try db.execute(sql: "DELETE FROM album WHERE id = 2")
        }
        guard case let .update(second)? = await iterator.next() else { Issue.record("no update"); return }
        #expect(second.path == .incremental)
        #expect(Self.ids(second.result) == (try await Self.expected(pool, Self.tracksByAlbum)))
    }

    @Test("records load through the row cache with the request's adapter (including scopes)")
    func recordsThroughTheCache() async throws {
        let pool = try await Self.library()
        let request = LiveQueryRequest(Self.tracksByAlbum.asRequest(of: TrackInfo.self), identity: "track.uuid", as: UUID.self)
        let query = try await LiveQuery.open(request, in: pool, options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        let cache = RowCache<UUID, TrackInfo>(query: query, reader: pool, pageSize: 4)
        cache.update(result: query.latestResult)
        _ = cache.rows(in: 0..<query.latestResult.count)
        try await withTimeLimit { await cache.waitForLoads() }
        let slots = cache.rows(in: 0..<query.latestResult.count)
        let expected = try await pool.read { db in try TrackInfo.fetchAll(db, Self.tracksByAlbum.asRequest(of: TrackInfo.self)) }
        #expect(slots.count == expected.count)
        for (slot, info) in zip(slots, expected) {
            guard case let .loaded(row, content) = slot else {
                Issue.record("row not loaded: \(slot)")
                continue
            }
            #expect(row.id == UUID(uuidString: info.track.uuid))
            #expect(content.track.title == info.track.title && content.album.title == info.album.title)
        }
        #expect(cache.pageState(0).description == "loaded")
    }

    @Test("rows an update changed are made from the commit's re-read, with the request's adapter (including scopes): no page query")
    func changedRecordsFromTheCommit() async throws {
        let pool = try await Self.library()
        let request = LiveQueryRequest(Self.tracksByAlbum.asRequest(of: TrackInfo.self), identity: "track.uuid", as: UUID.self)
        let query = try await LiveQuery.open(request, in: pool, options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        let cache = RowCache<UUID, TrackInfo>(query: query, reader: pool, pageSize: 4)
        let events = query.events   // from here on: .initial, then the update below
        cache.update(result: query.latestResult)
        _ = cache.rows(in: 0..<query.latestResult.count)
        try await withTimeLimit { await cache.waitForLoads() }
        let pageQueries = cache.statistics.pageQueries

        // A joined rename moves its album's tracks, a track's own title changes: one commit.
        try await withTimeLimit {
            try await pool.write { db in
                try db.execute(sql: "UPDATE album SET title = 'Zebra' WHERE id = 1")
                try db.execute(sql: "UPDATE track SET title = 't99' WHERE title = 't01'")
            }
        }
        let next = try await withTimeLimit { () -> LiveQueryUpdate<UUID>? in
            for await event in events { if case let .update(update) = event { return update } }
            return nil
        }
        let update = try #require(next)
        cache.update(with: update)
        let expected = try await withTimeLimit { try await pool.read { db in try TrackInfo.fetchAll(db, Self.tracksByAlbum.asRequest(of: TrackInfo.self)) } }
        let rows = update.result.rows(in: 0..<update.result.count)
        #expect(rows.map(\.id) == expected.compactMap { UUID(uuidString: $0.track.uuid) })
        for (row, info) in zip(rows, expected) {
            let content = cache.content(of: row.id, version: row.version)
            #expect(content?.track.title == info.track.title && content?.album.title == info.album.title, "\(info.track.title ?? "")")
        }
        #expect(cache.statistics.pageQueries == pageQueries, "the changed rows come from the commit, not a page")
        #expect(cache.statistics.rowsFromCommits == 4, "the album's three tracks and the retitled one")
    }

    @Test("including(optional:) keeps tracks whose album is gone, with a nil album")
    func optionalAssociation() async throws {
        let pool = try await Self.library()
        let base = Track.including(optional: Track.album.aliased(Self.albumAlias)).order(Self.albumAlias[Column("title")], Column("title"))
        let query = try await LiveQuery.open(LiveQueryRequest(base.asRequest(of: TrackWithOptionalAlbum.self), identity: "track.uuid", as: UUID.self),
                                             in: pool, options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        #expect(query.mode == .incremental)
        #expect(query.latestResult.count == 12)
        let updates = query.events
        var iterator = updates.makeAsyncIterator()
        _ = await iterator.next()
        try await pool.write { db in try db.execute(sql: "DELETE FROM album WHERE id = 1") }
        guard case let .update(update)? = await iterator.next() else { Issue.record("no update"); return }
        #expect(update.result.count == 12)
        #expect(Self.ids(update.result) == (try await Self.expected(pool, base)))
        let cache = RowCache<UUID, TrackWithOptionalAlbum>(query: query, reader: pool)
        cache.update(result: update.result)
        _ = cache.rows(in: 0..<12)
        try await withTimeLimit { await cache.waitForLoads() }
        let withoutAlbum = cache.rows(in: 0..<12).filter {
            if case let .loaded(_, info) = $0 { return info.album == nil }
            return false
        }
        #expect(withoutAlbum.count == 6, "3 tracks without album_id and the 3 of the deleted album")
    }

    @Test("joining(required:) with a filter on the association, and an SQLRequest")
    func joiningAndSQLRequest() async throws {
        let pool = try await Self.library()
        let joined = Track.joining(required: Track.album.filter(Column("artist_id") == 2)).order(Column("title"))
        let query = try await LiveQuery.open(LiveQueryRequest(joined), in: pool, options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        #expect(query.mode == .incremental)
        let counted = try await pool.read { db in try joined.fetchCount(db) }
        #expect(query.latestResult.count == counted)
        // Moving album 2 to artist 2 brings its tracks in.
        let updates = query.events
        var iterator = updates.makeAsyncIterator()
        _ = await iterator.next()
        try await pool.write { db in try db.execute(sql: "UPDATE album SET artist_id = 2 WHERE id = 2") }
        guard case let .update(update)? = await iterator.next() else { Issue.record("no update"); return }
        #expect(update.path == .incremental)
        #expect(update.result.count == 9)

        let sql = SQLRequest<Row>(sql: "SELECT track.id, track.title FROM track WHERE track.title > ? ORDER BY track.title DESC", arguments: ["t05"])
        let sqlQuery = try await LiveQuery.open(LiveQueryRequest(sql), in: pool, options: .init(dataVersionPollInterval: nil))
        defer { sqlQuery.cancel() }
        #expect(sqlQuery.mode == .incremental)
        #expect(sqlQuery.latestResult.count == 6)
    }

    @Test("bad requests: GRDB cannot compile it, a joined column as identity, a one-to-many association")
    func badRequests() async throws {
        let pool = try await Self.library()
        await #expect {
            _ = try await LiveQuery.open(LiveQueryRequest(Track.filter(Column("nope") == 1)), in: pool)
        } throws: { error in
            guard let error = error as? LiveQueryError, case .invalidSQL = error, let databaseError = error.databaseError else { return false }
            return databaseError.resultCode == .SQLITE_ERROR && databaseError.sql?.contains("nope") == true
                && databaseError.message?.contains("nope") == true
        }
        await #expect {
            _ = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT track.* FROM track JOIN album ON album.id = track.album_id", identity: "album.id",
                                                          as: Int64.self), in: pool)
        } throws: { error in
            guard case let .invalidRequest(.identityInJoinedTable(identity, table, base)) = error as? LiveQueryError else { return false }
            return identity == "album.id" && table == "album" && base == "track"
        }
        await #expect {
            _ = try await LiveQuery.open(LiveQueryRequest(Album.including(required: Album.tracks)), in: pool)
        } throws: { error in
            guard case let .invalidRequest(.oneToManyJoin(joined, _, _)) = error as? LiveQueryError else { return false }
            return joined == "track"
        }
        await #expect {
            _ = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT id, title FROM track ORDER BY title", identity: "title", as: String.self), in: pool)
        } throws: { error in
            guard case let .invalidRequest(.identityNotUnique(identity, _)) = error as? LiveQueryError else { return false }
            return identity == "title"
        }
        await #expect {
            _ = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT id FROM track ORDER BY title", section: "id"), in: pool)
        } throws: { error in
            guard case let .invalidRequest(.sectionNotFirstSortTerm(section, firstTerm)) = error as? LiveQueryError else { return false }
            return section == "id" && firstTerm == "title"
        }
        await #expect {
            _ = try await LiveQuery.open(LiveQueryRequest(sql: "DELETE FROM track"), in: pool)
        } throws: { error in
            guard case .invalidRequest(.notASelect) = error as? LiveQueryError else { return false }
            return true
        }
        // A refetched shape must name a result column as its identity.
        await #expect {
            _ = try await LiveQuery.open(LiveQueryRequest(sql: "SELECT album_id, count(*) FROM track GROUP BY album_id", identity: "nope",
                                                          as: Int64.self), in: pool)
        } throws: { error in
            guard case let .invalidRequest(.noSuchColumn(role, name, available)) = error as? LiveQueryError else { return false }
            return role == .identity && name == "nope" && available.contains("album_id")
        }
    }

    @Test("an identity expression that repeats is reported, never a corrupt list")
    func duplicateIdentityExpression() async throws {
        let pool = try await Self.library()
        let log = EventLog<String>()
        let query = try await LiveQuery.open(
            LiveQueryRequest(sql: "SELECT track.* FROM track ORDER BY track.title", identity: "substr(track.title, 1, 2)", as: String.self), in: pool,
            options: .init(dataVersionPollInterval: nil), callbackQueue: nil, onEvent: { log.append($0) })
        defer { query.cancel() }
        #expect(query.mode == .incremental)
        #expect(query.latestResult.count == 2, "t0… and t1…: the first of each")
        #expect(query.latestResult.leftOut.duplicateIdentities.count == 10)
        #expect(query.latestResult.leftOut.count == 10 && query.latestResult.leftOut.duplicateIdentities.examples.count == 3)
        let failures = log.drain().filter {
            if case .failure = $0 { return true }
            return false
        }
        #expect(failures.isEmpty, "rows left out are state of the result, not one failure per row")
    }

    @Test("explain says up front which path a request takes and why, and notes a missing foreign-key index")
    func explain() async throws {
        let pool = try await Self.library()
        let incremental = try await LiveQuery.explain(LiveQueryRequest(Self.tracksByAlbum), in: pool)
        #expect(incremental.path == .incremental && incremental.notes.isEmpty)
        let grouped = try await LiveQuery.explain(LiveQueryRequest(sql: "SELECT album_id, count(*) AS n FROM track GROUP BY album_id", identity: "album_id", as: Int64.self), in: pool)
        #expect(grouped.path == .refetch(reason: .request([.groupBy, .aggregate("count")])), "\(grouped.path)")
        try await pool.write { db in try db.execute(sql: "DROP INDEX track_album; DROP INDEX album_artist") }
        let query = try await LiveQuery.open(LiveQueryRequest(Track.including(required: Track.album.including(optional: Album.artist))),
                                             in: pool, options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        #expect(query.mode == .incremental)
        #expect(query.notes.count == 2 && query.notes.allSatisfy { $0.hasPrefix("no index on") }, "\(query.notes)")
    }
}
