import Foundation
import ListDiff
import Testing
@testable import LiveListClient

/// What a remote list shows of itself besides its rows, without I/O.
@Suite("List standing")
struct ListStandingTests {
    struct Failed: Error {}

    @Test("a restored list is stale until a message is applied; then live, and its snapshots say when")
    func freshness() {
        var standing = ListStanding()
        let saved = Date(timeIntervalSince1970: 1_000), applied = Date(timeIntervalSince1970: 2_000), now = Date(timeIntervalSince1970: 3_000)
        #expect(standing.staleSince == nil && standing.savedAt(now: now) == now, "nothing held yet: a snapshot is of now")
        standing.restored(savedAt: saved)
        #expect(standing.staleSince == saved && standing.savedAt(now: now) == saved)
        let endedStale = standing.applied(at: applied)
        #expect(endedStale && standing.staleSince == nil && standing.savedAt(now: now) == applied)
        let again = standing.applied(at: now)
        #expect(!again, "already live")
    }

    @Test("a failure is shown until the next message applied, whatever failed")
    func failures() {
        var standing = ListStanding()
        standing.failed(LoadFailure(Failed(), retry: {}))
        #expect(standing.failure != nil)
        _ = standing.applied(at: Date())
        #expect(standing.failure == nil)
    }
}
