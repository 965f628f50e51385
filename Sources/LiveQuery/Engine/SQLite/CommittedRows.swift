import Foundation
import GRDB
import ListDiff
import LiveQueryCore

/// The rows the query re-read at its latest commits, as GRDB rows laid out for the request's
/// records (its row adapter over the query's own columns): what a row cache makes its changed
/// rows from at once (``LiveQuery/committedRecords(as:)``), instead of reading their page again.
///
/// Kept only once a cache asked for them, by canonical identity with the content token they
/// were read at; at most ``limit`` rows (past it, it starts over), so a consumer a few commits
/// behind still finds its rows, and memory stays bounded whatever the commits touch.
///
/// `@unchecked Sendable`: `keeping` and `kept` are one `Locked` value, only touched under its lock
/// (GRDB's `Row` is not Sendable, so neither is the box); the rows are copies (`Row.copy()`), whose
/// values never change once made, so they are decoded outside the lock on any thread.
final class CommittedRows: @unchecked Sendable {
    /// Rows kept at most.
    static let limit = 1_000

    private let canonical: IdentityCanonicalizer
    private struct State {
        var keeping = false
        var kept: [SQLValue: (token: UInt64, row: Row)] = [:]
    }

    private let state = Locked(State())

    /// Keeps rows by `canonical` identity, the form a `LiveRow`'s identity value has.
    init(canonical: @escaping IdentityCanonicalizer) {
        self.canonical = canonical
    }

    /// Whether rows are kept: from the first ``startKeeping()`` on.
    var isKeeping: Bool { state.withLock { $0.keeping } }

    /// Keeps the rows of the commits from now on.
    func startKeeping() {
        state.withLock { $0.keeping = true }
    }

    /// Keeps `read`, rows re-read at a commit (copies), by identity (as stored) and token.
    ///
    /// - Complexity: O(rows).
    func keep(_ read: [(identity: SQLValue, token: UInt64, row: Row)]) {
        guard !read.isEmpty else { return }
        let read = read.suffix(Self.limit).map { (canonical($0.identity) ?? $0.identity, $0.token, $0.row) }
        state.withLock { state in
            if state.kept.count + read.count > Self.limit { state.kept.removeAll(keepingCapacity: true) }
            for (identity, token, row) in read { state.kept[identity] = (token, row) }
        }
    }

    /// Forgets every row: another request lays its rows out differently, at the same tokens.
    func removeAll() {
        state.withLock { $0.kept.removeAll() }
    }

    /// The kept rows of `wanted` held at the very token each is asked at.
    ///
    /// - Complexity: O(wanted).
    func rows<ID: LiveIdentity>(of wanted: [LiveRow<ID>]) -> [(id: ID, row: Row)] {
        state.withLock { state in
            wanted.compactMap { wanted in
                guard let held = state.kept[wanted.id.identityValue], held.token == wanted.version else { return nil }
                return (wanted.id, held.row)
            }
        }
    }
}

/// The request's own row adapter applied to the query's columns where they sit in a wider
/// statement (the re-read of changed rows), so that a record decodes from it as from the
/// records statement, whose columns come first: GRDB's chaining of adapters, through the
/// `RowAdapter` protocol's hook for custom adapters.
struct QueryColumnsAdapter: RowAdapter {
    /// Where the query's columns are in the statement.
    let columns: Range<Int>
    /// The request's adapter (`nil`: the columns as they are).
    let base: (any RowAdapter)?

    func _layoutedAdapter(from layout: some _RowLayout) throws -> any _LayoutedRowAdapter {
        let queryColumns = try RangeRowAdapter(columns)._layoutedAdapter(from: layout)
        guard let base else { return queryColumns }
        return try base._layoutedAdapter(from: queryColumns._mapping)
    }
}
