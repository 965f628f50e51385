import Foundation
import ListDiff
import LiveListClient
import LiveListWire
import Testing

/// What a server sends, or a damaged offline file holds, that does not fit the list's own shape:
/// shown as well as it can be, never a crash.
@Suite("Rows that do not fit their columns", .timeLimit(.minutes(1)))
@MainActor
struct HostileRowsTests {
    /// Found by the offline-store fuzz target: a kept row with fewer values than columns, and a
    /// pending update of a column it lacks, crashed the client (index out of range) as the update
    /// was laid over the list.
    @Test("a held row with fewer values than columns takes a pending update of a column it lacks, reading the others as NULL")
    func updateOfMissingColumn() throws {
        let remote = RemoteLiveQuery(url: "ws://127.0.0.1:1/live", query: "inbox")
        var shown: RemoteRecord?
        remote.onEvent = { event in
            if case let .changes(changeset, _) = event, let after = changeset.after {
                shown = remote.records.record(for: after.item(at: ItemPath(section: 0, item: 0)))
            }
        }
        let list = WireReset(sub: 0, version: WireVersion(epoch: "t", sequence: 1), reason: .subscribed, columns: ["id", "name", "unread"],
                             sections: [WireSection(key: .null, count: 2)], window: WireWindow(start: 0, count: 2),
                             rows: [WireRow(position: 0, id: .integer(1), values: [.integer(1)]),
                                    WireRow(position: 1, id: .integer(2), values: [.integer(2), .text("b"), .integer(0)])])
        try remote.restore(RemoteListSnapshot(query: "inbox", arguments: [:], list: list, savedAt: Date()))
        _ = remote.showPending([.update(id: .integer(1), values: ["unread": .integer(1)])])
        #expect(shown?.values == [.integer(1), .null, .integer(1)])
        #expect(shown?.isPending == true)
    }
}
