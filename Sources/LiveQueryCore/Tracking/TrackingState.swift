/// The decisions of a live query's core, as a value: what the database reports goes in as
/// events, what to do comes out as actions. The engine's runner (``SQLiteQueryRunner`` for SQLite)
/// feeds it, and ``LiveTracker`` carries the actions out with the engine's reads — the index
/// update, the delivery — so that every decision here is tested without a database
/// (`TrackingStateTests`).
///
/// Rows are named by the engine's row key (SQLite's rowid of the base table).
package struct TrackingState: Sendable {
    /// Where the query stands.
    package enum Phase: Sendable, Equatable {
        /// The query opened with its first screen and the rest of the result is being read:
        /// commits meanwhile are remembered — the rows they touched, or why they need a refetch —
        /// and applied when the index is complete.
        case building(touched: Set<Int64>, refetch: RefetchReason?)
        /// The index holds the whole result and follows every commit.
        case following
        /// Stopped: nothing is observed or delivered any more.
        case stopped
    }

    /// What the current transaction did to the result.
    package enum Transaction: Sendable, Equatable {
        /// It touched these rows (re-read at commit).
        case rows(Set<Int64>)
        /// It needs a refetch, for this reason (the first one found).
        case refetch(RefetchReason)
    }

    /// What the runner does next.
    package enum Action: Sendable, Equatable {
        case none
        /// Re-read these rows and apply them to the index.
        case reread(Set<Int64>)
        /// Fetch the whole result again and diff it.
        case refetch(RefetchReason)
    }

    /// What the runner does when the rest of the first fetch arrives.
    package enum BuildCompletion: Sendable, Equatable {
        /// Nothing: the build was abandoned (a new request, a stop).
        case abandoned
        /// The read failed: the query is behind; its next commit or poll refetches.
        case failed
        /// Complete the index, then apply what commits did meanwhile (`.none`: the result only
        /// grows from the first screen to the whole).
        case complete(then: Action)
    }

    package private(set) var phase: Phase
    package private(set) var transaction: Transaction = .rows([])
    /// A failure left the index behind the database: the next commit or poll refetches.
    package private(set) var isBehind = false
    /// Past this many rows touched in one transaction, a refetch is cheaper.
    let refetchThreshold: Int

    package init(isBuilding: Bool, refetchThreshold: Int) {
        phase = isBuilding ? .building(touched: [], refetch: nil) : .following
        self.refetchThreshold = refetchThreshold
    }

    package var isStopped: Bool { phase == .stopped }
    package var isBuilding: Bool {
        if case .building = phase { return true }
        return false
    }

    /// Whether a touched row still matters to the current transaction (not once it refetches).
    package var wantsRows: Bool {
        guard case .rows = transaction else { return false }
        return !isStopped
    }

    // MARK: - Events of a transaction

    /// A row the transaction inserted, updated or deleted. `false` once the transaction touched
    /// more rows than the threshold: it then refetches, and its further rows need not be reported.
    ///
    /// - Complexity: O(1) amortized.
    @discardableResult
    package mutating func touched(_ row: Int64) -> Bool {
        guard case var .rows(rows) = transaction else { return false }
        transaction = .rows([])   // releases the set, so the insert below does not copy it
        rows.insert(row)
        guard rows.count <= refetchThreshold else {
            transaction = .refetch(.tooManyRowsChanged(threshold: refetchThreshold))
            return false
        }
        transaction = .rows(rows)
        return true
    }

    /// A change that names no row the query can re-read: the transaction refetches (for the
    /// first reason found).
    package mutating func needsRefetch(_ reason: RefetchReason) {
        guard case .rows = transaction else { return }
        transaction = .refetch(reason)
    }

    package mutating func rolledBack() {
        transaction = .rows([])
    }

    /// The transaction committed: what to do about it. While the first fetch is still being
    /// read, the commit is remembered instead.
    package mutating func committed() -> Action {
        let done = transaction
        transaction = .rows([])
        switch phase {
        case .stopped:
            return .none
        case let .building(touched, refetch):
            switch done {
            case let .rows(rows): phase = .building(touched: touched.union(rows), refetch: refetch)
            case let .refetch(reason): phase = .building(touched: touched, refetch: refetch ?? reason)
            }
            return .none
        case .following:
            switch done {
            case let .refetch(reason): return .refetch(reason)
            case .rows where isBehind: return .refetch(.recovering)
            case let .rows(rows): return rows.isEmpty ? .none : .reread(rows)
            }
        }
    }

    // MARK: - Events of the runner

    /// Carrying out an action failed (delivered as a failure): the index is behind.
    package mutating func failed() { isBehind = true }

    /// The whole result was fetched again: the index is up to date.
    package mutating func refetched() { isBehind = false }

    /// A look for other connections' commits found none: a query left behind catches up now.
    package func nothingCommittedElsewhere() -> Action {
        guard case .following = phase, isBehind else { return .none }
        return .refetch(.recovering)
    }

    /// A look found other connections' commits that touched `rows` (and nothing that needs a
    /// refetch): they are re-read — unless a failure left the query behind, when re-reading them
    /// alone would not bring back the rows the failure lost, and it refetches.
    package func committedElsewhere(touching rows: Set<Int64>) -> Action {
        guard case .following = phase else { return .none }
        if isBehind { return .refetch(.recovering) }
        return rows.isEmpty ? .none : .reread(rows)
    }

    /// Whether other connections' commits are looked for now (not while the first fetch is read:
    /// they are seen by the first look after it).
    package var looksForOtherCommits: Bool { phase == .following }

    /// The rest of the first fetch arrived (`succeeded`) or failed.
    package mutating func buildFinished(succeeded: Bool) -> BuildCompletion {
        guard case let .building(touched, refetch) = phase else { return .abandoned }
        phase = .following
        guard succeeded else {
            isBehind = true
            return .failed
        }
        if let refetch { return .complete(then: .refetch(refetch)) }
        return .complete(then: touched.isEmpty ? .none : .reread(touched))
    }

    /// A new request replaces the current one: a build under way belongs to the old one.
    package mutating func requestChanged() {
        if case .building = phase { phase = .following }
    }

    /// Stops following. `false` when already stopped.
    package mutating func stop() -> Bool {
        guard phase != .stopped else { return false }
        phase = .stopped
        transaction = .rows([])
        return true
    }
}
