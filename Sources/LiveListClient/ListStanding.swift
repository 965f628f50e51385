import Foundation
import ListDiff

/// What a remote list shows of itself besides its rows, as one value: the failure it shows until
/// a message is applied again, and how fresh its rows are — none yet, restored from a snapshot
/// saved at some time (stale), or live, a message last applied at some time. Tested without I/O.
struct ListStanding {
    enum Freshness: Equatable {
        case none
        case restored(savedAt: Date)
        case live(lastAt: Date)
    }

    private(set) var failure: LoadFailure?
    private(set) var freshness = Freshness.none

    /// When the rows shown were held, while they are a restored snapshot the server has not
    /// brought up to date yet.
    var staleSince: Date? {
        if case let .restored(savedAt) = freshness { return savedAt }
        return nil
    }

    /// When the rows held were the server's: what a snapshot of them says it was saved at.
    func savedAt(now: Date) -> Date {
        switch freshness {
        case .none: now
        case let .restored(at), let .live(at): at
        }
    }

    /// A snapshot saved at `savedAt` is shown before any message.
    mutating func restored(savedAt: Date) {
        freshness = .restored(savedAt: savedAt)
    }

    /// Something failed (the connection, a read, the subscription): the list shows `failure`.
    mutating func failed(_ failure: LoadFailure) {
        self.failure = failure
    }

    /// A message was applied at `now`: whatever failed is over, and the list is live. `true` when
    /// this ended a stale state (the restored rows are the server's now).
    mutating func applied(at now: Date) -> Bool {
        failure = nil
        let wasStale = staleSince != nil
        freshness = .live(lastAt: now)
        return wasStale
    }
}
