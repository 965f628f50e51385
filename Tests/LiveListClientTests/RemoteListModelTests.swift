import ListDiff
import LiveListClient
import LiveListWire
import Testing

@Suite("The client's model")
struct RemoteListModelTests {
    static let version = WireVersion(epoch: "t", sequence: 0)

    static func reset(count: Int, window: Range<Int>) -> ServerMessage {
        .reset(WireReset(sub: 1, version: version, reason: .subscribed, columns: ["id"], sections: [WireSection(key: .null, count: count)],
                         window: WireWindow(window), rows: window.map { WireRow(position: $0, id: .integer(Int64($0)), values: [.integer(Int64($0))]) }))
    }

    @Test("A row that stays but comes into the window with a changeset is reloaded: its cell showed a placeholder of another identity")
    func rowsThatSlideInAreReloaded() throws {
        var model = RemoteListModel()
        _ = try model.receive(Self.reset(count: 10, window: 0..<4))
        // Row 0 is deleted: the row at old position 4 (never sent) slides to position 3, inside the window.
        var changes = ListChanges()
        changes.itemDeletes = [ItemPath(section: 0, item: 0)]
        let message = WireChanges(sub: 1, from: Self.version, to: Self.version.next, changes: changes, insertedSectionKeys: [],
                                  insertedIDs: [], movedIDs: [], reloadedIDs: [], rows: [WireRow(position: 3, id: .integer(4), values: [.integer(4)])])
        guard case let .changes(changeset, _) = try model.receive(.changes(message)) else {
            Issue.record("no changeset")
            return
        }
        #expect(changeset.changes.itemReloads == [ItemPath(section: 0, item: 4)])
        #expect(model.state.row(at: 3).id == .row(.integer(4)))
        #expect(model.record(for: model.state.row(at: 3))?.values == [.integer(4)])
    }

    @Test("A message that contradicts the list changes nothing and says why; a skipped version is a gap")
    func contradictions() throws {
        var model = RemoteListModel()
        _ = try model.receive(Self.reset(count: 3, window: 0..<3))
        let before = model.state.stateID
        var changes = ListChanges()
        changes.itemDeletes = [ItemPath(section: 0, item: 7)]
        let bad = WireChanges(sub: 1, from: Self.version, to: Self.version.next, changes: changes, insertedSectionKeys: [],
                              insertedIDs: [], movedIDs: [], reloadedIDs: [], rows: [])
        #expect(throws: RemoteListError.self) { try model.receive(.changes(bad)) }
        #expect(model.state.stateID == before && model.version == Self.version)
        let gap = WireChanges(sub: 1, from: Self.version.next, to: Self.version.next.next, changes: ListChanges(), insertedSectionKeys: [],
                              insertedIDs: [], movedIDs: [], reloadedIDs: [], rows: [])
        #expect(throws: RemoteListError.versionGap(expected: Self.version, received: Self.version.next)) { try model.receive(.changes(gap)) }
    }

    /// Found by the server-message fuzz target (Tests/Fuzz/server-messages/crash-23b35eaa…): a
    /// delete or a move in a section the list does not have was counted in it, out of range.
    @Test("A delete or a move in a section the list does not have is refused, not counted")
    func itemsOfMissingSections() throws {
        for (deletes, moves) in [([ItemPath(section: 1, item: 0)], []), ([], [Move(from: ItemPath(section: 3, item: 0), to: ItemPath(section: 0, item: 0))])] {
            var model = RemoteListModel()
            _ = try model.receive(Self.reset(count: 3, window: 0..<3))
            var changes = ListChanges()
            changes.itemDeletes = deletes
            changes.itemMoves = moves
            let message = WireChanges(sub: 1, from: Self.version, to: Self.version.next, changes: changes, insertedSectionKeys: [],
                                      insertedIDs: [], movedIDs: moves.map { _ in .integer(9) }, reloadedIDs: [], rows: [])
            #expect(throws: RemoteListError.self) { try model.receive(.changes(message)) }
            #expect(model.state.counts == [3] && model.version == Self.version)
        }
    }
}
