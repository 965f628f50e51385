import Foundation
import GRDB
import ListDiff
import ListPresenter
import ListTesting
import LiveQuery
import LiveQueryUI
import Testing

/// The music app, from the README alone: a sectioned, UUID-identified join of 20,000 tracks that
/// follows writes and a filter change, read through the observable model. Every check compares
/// with a fresh SELECT.
@Suite(.timeLimit(.minutes(2)))
@MainActor
struct MusicAppTests {
    static func request(minimumYear: Int? = nil) -> LiveQueryRequest<UUID> {
        let tracks = TableAlias(), albums = TableAlias(), artists = TableAlias()
        var query = Track.aliased(tracks)
            .including(required: Track.album.aliased(albums).including(required: Album.artist.aliased(artists)))
            .order(artists[Column("name")], albums[Column("title")], tracks[Column("number")])
        if let minimumYear { query = query.filter(albums[Column("year")] >= minimumYear) }
        return LiveQueryRequest(query.asRequest(of: TrackRow.self), identity: tracks[Column("uuid")], as: UUID.self,
                                section: artists[Column("name")])
    }

    /// What SQLite returns for the request now: track identities in order, and section names.
    nonisolated static func select(_ pool: DatabasePool, minimumYear: Int = 0) async throws -> (ids: [UUID], sections: [String]) {
        try await pool.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT track.uuid, artist.name FROM track
                JOIN album ON album.id = track.albumId JOIN artist ON artist.id = album.artistId
                WHERE album.year >= ? ORDER BY artist.name, album.title, track.number, track.uuid
                """, arguments: [minimumYear])
            var sections: [String] = []
            for row in rows where sections.last != row[1] { sections.append(row[1]) }
            return (rows.map { $0[0] }, sections)
        }
    }

    func expectEqual(_ result: LiveResult<UUID>, _ pool: DatabasePool, minimumYear: Int = 0, _ context: String) async throws {
        let (ids, sections) = try await Self.select(pool, minimumYear: minimumYear)
        #expect(result.isComplete && result.leftOut.isEmpty, "\(context)")
        #expect(result.rows(in: 0..<result.count).map(\.id) == ids, "\(context): the list differs from a fresh SELECT")
        #expect((0..<result.sectionCount).map { result.sectionName(at: $0) } == sections, "\(context): sections differ")
    }

    @Test("open, read records through the model, follow writes and a filter change: always the SELECT")
    func musicApp() async throws {
        let pool = try MusicLibrary.make()
        let explanation = try await LiveQuery.explain(Self.request(), in: pool)
        #expect(explanation.path == .incremental, "\(explanation)")
        let query = try await LiveQuery.open(Self.request(), in: pool)
        defer { query.cancel() }
        let first = query.initialResult
        #expect(first.count == 20_000 && first.sectionCount == 100 && first.sectionName(at: 0) == "Artist 001")
        try await expectEqual(first, pool, "at open")

        // The model: index paths and records, loaded by page.
        let model = LiveQueryModel<UUID, TrackRow>(query: query, reader: pool)
        let (ids, _) = try await Self.select(pool)
        #expect(model.indexPath(of: ids[250]) == ItemPath(section: 1, item: 50))
        #expect(model.location(of: UUID()) == .notInResult)
        var loaded: TrackRow?
        for _ in 0..<400 {
            if case let .loaded(_, record)? = model.record(at: ItemPath(section: 1, item: 50)) {
                loaded = record
                break
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(loaded?.artist.name == "Artist 002" && loaded?.track.uuid == ids[250] && loaded?.track.number == 11)

        // Writes: a renamed artist moves its 200 tracks to another section; a track added; one deleted.
        try await pool.write { db in try db.execute(sql: "UPDATE artist SET name = 'Zed' WHERE id = 1") }
        var result = try await query.upToDate()
        #expect(result.sectionName(at: 99) == "Zed" && result.itemCount(inSection: 99) == 200)
        try await expectEqual(result, pool, "after a rename")
        let added = UUID()
        try await pool.write { db in
            try Track(id: nil, uuid: added, albumId: 5, number: 0, title: "Intro").insert(db)
            try db.execute(sql: "DELETE FROM track WHERE uuid = ?", arguments: [ids[300]])
        }
        result = try await query.upToDate()
        #expect(result.count == 20_000 && result.path(ofItem: ids[300]) == nil && result.path(ofItem: added) != nil)
        try await expectEqual(result, pool, "after an insert and a delete")

        // The data source piece: cells of a (headless) collection view read records through the
        // controller; placeholders turn into records; every batch passes UIKit's rules.
        let controller = LiveQueryController<UUID, TrackRow>(query: query, reader: pool)
        let (view, dataSource) = controller.cells.attachHeadlessView(viewportRows: 12, sectionHeaderRows: 1)
        view.layoutIfNeeded()
        func firstCellTitle() -> String? {
            if case let .record(_, record) = controller.cells.content(at: ItemPath(section: 0, item: 0)) { return record.track.title }
            return nil
        }
        for _ in 0..<400 where firstCellTitle() == nil { try await Task.sleep(for: .milliseconds(5)) }
        #expect(firstCellTitle() == "Track 1")
        #expect(controller.cells.numberOfSections == result.sectionCount)
        let firstID = result.row(at: 0)?.id
        try await pool.write { db in try db.execute(sql: "UPDATE track SET number = 99 WHERE uuid = ?", arguments: [firstID]) }
        let moved = try await query.upToDate()
        for _ in 0..<400 where controller.result.stateID != moved.stateID { try await Task.sleep(for: .milliseconds(5)) }
        #expect(controller.result.stateID == moved.stateID && view.violations.isEmpty, "\(view.violations)")
        withExtendedLifetime(dataSource) {}

        // A filter change is one call and one update.
        let events = query.events
        try await query.setRequest(Self.request(minimumYear: 2000))
        var update: LiveQueryUpdate<UUID>?
        for await event in events {
            if case let .update(value) = event { update = value; break }
        }
        #expect(update.map { $0.result.count < 20_000 } == true)
        try await expectEqual(try await query.upToDate(), pool, minimumYear: 2000, "after the filter change")
        let latest = query.latestResult
        for _ in 0..<400 where model.result.stateID != latest.stateID { try await Task.sleep(for: .milliseconds(5)) }
        #expect(model.count == latest.count && model.numberOfSections == latest.sectionCount, "the model follows the query")
    }
}
