import Foundation
import GRDB
import ListDiff
import Observation
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// What NSFetchedResultsController users reach for, and every way a live query delivers: any
/// number of `events` consumers, the main-actor callback, and the observable model.
@Suite(.timeLimit(.minutes(3)))
struct LiveQueryDeliveryTests {
    static let sectioned = LiveQueryRequest(
        sql: "SELECT track.*, album.title AS album_title FROM track JOIN album ON album.id = track.album_id ORDER BY album.title, track.title",
        identity: "track.uuid", as: UUID.self, section: "album.title")

    @Test("index paths, section names and index titles, counts")
    func fetchedResultsControllerCalls() async throws {
        let pool = try await GRDBRequestTests.library()
        let query = try await LiveQuery.open(Self.sectioned, in: pool, options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        let result = query.latestResult
        #expect(query.mode == .incremental)
        #expect((0..<result.sectionCount).map { result.sectionName(at: $0) } == ["Blue", "Kind", "Pastel"])
        #expect(result.sectionIndexTitles == ["B", "K", "P"])
        #expect(result.section(forSectionIndexTitle: "K") == 1)
        #expect(result.section(forSectionIndexTitle: "Q") == nil)
        let perSection = (0..<result.sectionCount).map { result.itemCount(inSection: $0) }
        #expect(perSection == [3, 3, 3] && result.count == 9)
        let expected = try await pool.read { db in
            try String.fetchAll(db, sql: "SELECT track.uuid FROM track JOIN album ON album.id = track.album_id ORDER BY album.title, track.title")
        }
        for (position, uuid) in expected.enumerated() {
            let id = try #require(UUID(uuidString: uuid))
            #expect(result.indexPath(of: id) == result.itemPath(ofPosition: position))
            #expect(result.indexPath(of: id).map { result.item(at: $0).id } == id)
        }
        #expect(result.indexPath(of: UUID()) == nil)
    }

    @Test("two consumers of events, iterating at once, each get every update in order from the result they started at")
    func concurrentConsumers() async throws {
        let pool = try await GRDBRequestTests.library()
        let query = try await LiveQuery.open(Self.sectioned, in: pool, options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        let first = query.events, second = query.events
        func collect(_ stream: AsyncStream<LiveQueryEvent<UUID>>) async -> [ListStateID?] {
            var states: [ListStateID?] = []
            for await event in stream {
                switch event {
                case let .initial(result): states.append(result.stateID)
                case let .update(update):
                    #expect(update.changeset.before?.stateID == states.last ?? nil, "each changeset starts where the previous ended")
                    states.append(update.result.stateID)
                case .failure: break
                }
                if states.count == 6 { break }
            }
            return states
        }
        async let a = collect(first)
        async let b = collect(second)
        for number in 0..<5 {
            try await pool.write { db in
                try db.execute(sql: "UPDATE track SET title = ? WHERE id = (SELECT id FROM track WHERE album_id IS NOT NULL ORDER BY id LIMIT 1 OFFSET ?)",
                               arguments: ["u\(number)", number])
            }
        }
        let (statesA, statesB) = await (a, b)
        #expect(statesA.count == 6 && statesA == statesB)
    }

    @Test("the main-actor callback receives every update on the main actor")
    @MainActor
    func mainActorCallback() async throws {
        let pool = try await GRDBRequestTests.library()
        @MainActor final class Received {
            var paths: [LiveUpdatePath] = []
        }
        let received = Received()
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        let query = try await LiveQuery.open(Self.sectioned, in: pool, options: .init(dataVersionPollInterval: nil), onMainActor: { event in
            MainActor.assertIsolated()
            if case let .update(update) = event {
                received.paths.append(update.path)
                continuation.yield()
            }
        })
        defer { query.cancel() }
        try await pool.write { db in try db.execute(sql: "UPDATE album SET title = 'Zed' WHERE id = 1") }
        try await pool.write { db in try db.execute(sql: "DELETE FROM track WHERE id = 2") }
        var iterator = stream.makeAsyncIterator()
        _ = await iterator.next()
        _ = await iterator.next()
        #expect(received.paths == [.incremental, .incremental])
    }

    @Test("the observable model: observers hear of new results and of rows that loaded; records come through the cache")
    @MainActor
    func observableModel() async throws {
        let pool = try await GRDBRequestTests.library()
        let request = LiveQueryRequest(GRDBRequestTests.tracksByAlbum.asRequest(of: TrackInfo.self), identity: "track.uuid", as: UUID.self,
                                       section: "a.title")
        let query = try await LiveQuery.open(request, in: pool, options: .init(dataVersionPollInterval: nil))
        defer { query.cancel() }
        let model = LiveQueryModel<UUID, TrackInfo>(query: query, reader: pool, pageSize: 4)
        #expect(model.numberOfSections == 3 && model.count == 9 && model.listState.description == "loaded")
        #expect(model.sectionName(at: 0) == "Blue" && model.sectionIndexTitles == ["B", "K", "P"])

        // A record is a placeholder until its page loads; observers of it are told when it has.
        let path = ItemPath(section: 1, item: 0)
        var slot = model.record(at: path)
        for _ in 0..<20 {
            if case .loaded? = slot { break }
            let loaded = AsyncStream<Void>.makeStream()
            withObservationTracking { slot = model.record(at: path) } onChange: { loaded.continuation.yield() }
            if case .loaded? = slot { break }
            var loads = loaded.stream.makeAsyncIterator()
            _ = await loads.next()
            slot = model.record(at: path)
        }
        guard case let .loaded(row, info)? = slot else {
            Issue.record("not loaded after the model said so: \(String(describing: model.record(at: path)))")
            return
        }
        #expect(info.album.title == "Kind" && model.indexPath(of: row.id) == path)

        // A write: observers of the result are told, and the latest update carries the changeset.
        let changed = AsyncStream<Void>.makeStream()
        withObservationTracking { _ = model.result } onChange: { changed.continuation.yield() }
        try await pool.write { db in try db.execute(sql: "UPDATE album SET title = 'Angle' WHERE id = 3") }
        var changes = changed.stream.makeAsyncIterator()
        _ = await changes.next()
        for _ in 0..<100 where model.latestUpdate == nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(model.latestUpdate?.path == .incremental)
        #expect(model.sectionName(at: 0) == "Angle" && model.pageState(at: ItemPath(section: 0, item: 0)).description != "failed")
        // The renamed album's track was loaded: its new record came with the update, no page read.
        guard case let .loaded(moved, renamed)? = model.record(at: ItemPath(section: 0, item: 0)) else {
            Issue.record("the changed row is not held at once: \(String(describing: model.record(at: ItemPath(section: 0, item: 0))))")
            return
        }
        #expect(moved.id == row.id && renamed.album.title == "Angle" && model.cache.statistics.rowsFromCommits > 0)
    }
}
