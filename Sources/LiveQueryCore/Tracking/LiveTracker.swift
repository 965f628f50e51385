import ListDiff

/// The engine-independent core of one live query: the result's index, the tracking state, the
/// statistics and the event channel, and the carrying out of what ``TrackingState`` decided with
/// rows an engine reads (``EngineReads``) — applying touched rows to the index, refetching and
/// diffing, completing the first fetch — and the delivery of the changesets. Nothing here names
/// SQLite or GRDB: an engine's runner (SQLite's is `SQLiteQueryRunner`) captures changes, feeds the
/// state's events and hands its reads to ``carryOut(_:_:start:)`` (docs/ARCHITECTURE.md, "The
/// engine seam").
///
/// `@unchecked Sendable`: ``state`` and ``layout`` are only read and changed on the engine's
/// serial queue (SQLite: the database writer's), where the runner calls every method; the index,
/// the channel and the statistics are thread-safe on their own.
package final class LiveTracker<ID: LiveIdentity>: @unchecked Sendable {
    package let index: LiveIndex
    package let channel: EventChannel<ID>
    package let statistics: StatisticsBox
    /// The decisions: what the current transaction touched, whether the index is behind, whether
    /// the first fetch is still being read.
    package var state: TrackingState
    /// How the current request's rows are ordered and grouped: what a refetch builds with.
    package var layout: ResultLayout {
        didSet { indexHasLayout = false }
    }
    /// Whether the index is ordered by ``layout`` (no new request since its last build): only
    /// then can a refetch be applied to it as row changes.
    private var indexHasLayout = true

    package init(index: LiveIndex, layout: ResultLayout, state: TrackingState, channel: EventChannel<ID>, statistics: StatisticsBox) {
        self.index = index
        self.layout = layout
        self.state = state
        self.channel = channel
        self.statistics = statistics
    }

    /// Whether the query opened with its first screen and still indexes the rest.
    package var isBuilding: Bool { state.isBuilding }

    /// Delivers a failure; the index is behind from then on.
    package func reportFailure(_ failure: LiveQueryError) {
        state.failed()
        channel.deliver(.failure(failure))
    }

    /// Carries out what the state decided.
    package func carryOut(_ action: TrackingState.Action, _ reads: some EngineReads, start: ContinuousClock.Instant) throws {
        switch action {
        case .none: break
        case let .reread(rows): try applyTouchedRows(rows, reads, start: start)
        case let .refetch(reason): try refetch(reads, reason: reason, start: start)
        }
    }

    /// Re-reads the touched rows with the query's own filter, so filter semantics are the
    /// engine's, and moves them inside the index.
    /// - Complexity: O(k log n) for k touched rows in a result of n.
    package func applyTouchedRows(_ rows: Set<Int64>, _ reads: some EngineReads, start: ContinuousClock.Instant) throws {
        let applied = try applyRows(rows, reads)
        // A new state goes out even with no change to the rows when the rows left out changed:
        // the result says so (the index keeps the state before when nothing changed at all).
        guard applied.after.stateID != applied.before.stateID else { return }
        statistics.update { $0.incrementalUpdates += 1 }
        let changeset = LiveChangeset<ID>(changes: applied.changes, from: LiveResult<ID>(applied.before), to: LiveResult<ID>(applied.after))
        channel.deliver(.update(LiveQueryUpdate(changeset: changeset, result: LiveResult(applied.after), path: .incremental,
                                                latency: start.duration(to: .now))))
    }

    /// Re-reads the touched rows and applies them to the index.
    func applyRows(_ touched: Set<Int64>, _ reads: some EngineReads) throws -> AppliedChanges {
        var fetched: [Int64: IndexEntry] = [:]
        var ids = touched
        var pending = Array(touched)
        while !pending.isEmpty {
            let found = try reads.reread(pending)
            for entry in found { fetched[entry.rowid] = entry }
            // A row whose identity another row of the index still holds: that row may have changed
            // in a commit not applied yet (another connection's, seen by this re-read). It is read
            // too, so that only rows the database really holds twice are reported as duplicates.
            let holders = index.otherHolders(ofIdentitiesOf: found, excluding: ids)
            ids.formUnion(holders)
            pending = Array(holders)
        }
        statistics.update { $0.rowsRead += fetched.count }
        return index.apply(ids.map { RowChange(rowid: $0, new: fetched[$0]) })
    }

    /// Fetches the whole result again and diffs it against what was delivered last.
    /// - Complexity: O(n) for n rows: the refetch path's price.
    package func refetch(_ reads: some EngineReads, reason: RefetchReason, start: ContinuousClock.Instant, deliversEmptyChange: Bool = false) throws {
        var builder = index.makeBuilder(layout: layout)
        try reads.fetchAll(into: &builder, mayBeLarge: index.current.count >= 10_000)
        let count = builder.count
        statistics.update {
            $0.rowsRead += count
            $0.refetches += 1
        }
        // Consumers were told of the failure that left the query behind: this refetch, whatever
        // its reason, is what brings it back, and they must hear so even when nothing changed.
        let recovers = state.isBehind
        state.refetched()
        let before: PublishedResult, after: PublishedResult, changes: ListChanges
        if indexHasLayout, let rowChanges = index.rowChanges(reaching: builder) {
            // Few rows changed: applied as changes, the new state shares every other node with
            // the one before (a kept result costs what changed, not the whole list again).
            let applied = index.apply(rowChanges)
            (before, after, changes) = (applied.before, applied.after, applied.changes)
        } else {
            (before, after) = index.replaceAll(with: builder)
            indexHasLayout = true
            changes = Self.diff(before, after)
        }
        // A recovery is delivered even when nothing changed: it tells consumers told of the
        // failure (a server's subscribers, its readiness) that the query follows again.
        guard deliversEmptyChange || recovers || reason == .recovering || !changes.isEmpty || after.leftOut != before.leftOut else {
            index.keepDelivered(before)
            return
        }
        let changeset = LiveChangeset<ID>(changes: changes, from: LiveResult<ID>(before), to: LiveResult<ID>(after))
        channel.deliver(.update(LiveQueryUpdate(changeset: changeset, result: LiveResult(after), path: .refetch(reason: reason),
                                                latency: start.duration(to: .now))))
    }

    /// The logical changes between two results, paired by identity and compared by content
    /// token. O(n): the refetch path's price.
    static func diff(_ before: PublishedResult, _ after: PublishedResult) -> ListChanges {
        if before.layout.identityIsRowid && after.layout.identityIsRowid {
            return Changeset(from: stamps(before) { $0.rowid }, to: stamps(after) { $0.rowid }).changes
        }
        return Changeset(from: stamps(before) { before.layout.identity(of: $0) }, to: stamps(after) { after.layout.identity(of: $0) }).changes
    }

    private static func stamps<Key: Hashable>(_ result: PublishedResult, _ identity: (IndexEntry) -> Key) -> ListSnapshot<LiveSection, Stamp<Key>> {
        var sections: [SnapshotSection<LiveSection, Stamp<Key>>] = []
        sections.reserveCapacity(result.sectionCount)
        var start = 0
        for index in 0..<result.sectionCount {
            let info = result.section(at: index)
            var items: [Stamp<Key>] = []
            items.reserveCapacity(info.count)
            result.rows.forEach(in: start..<start + info.count) { entry in
                items.append(Stamp(id: identity(entry), token: entry.token))
                return true
            }
            sections.append(SnapshotSection(LiveSection(id: info.key), items: items))
            start += info.count
        }
        return ListSnapshot(sections: sections)
    }

    // MARK: - The rest of the first fetch

    /// Completes the index with every row, applies what commits touched meanwhile, and delivers
    /// one update from the first screen to the whole result: on the writer's queue.
    package func finishBuild(_ builder: IndexBuilder?, _ reads: some EngineReads) {
        let start = ContinuousClock.now
        guard case let .complete(then: next) = state.buildFinished(succeeded: builder != nil), let builder else { return }
        let (before, built) = index.replaceAll(with: builder)
        var after = built
        do {
            switch next {
            case .none: break
            case let .reread(rows): after = try applyRows(rows, reads).after
            case .refetch:
                var fresh = index.makeBuilder(layout: layout)
                try reads.fetchAll(into: &fresh, mayBeLarge: true)
                let count = fresh.count
                statistics.update { $0.rowsRead += count }
                after = index.replaceAll(with: fresh).after
            }
        } catch {
            reportFailure(error as? LiveQueryError ?? .underlying(error))
        }
        let changes = next == .none ? Self.appendedRows(from: before, to: after) : Self.diff(before, after)
        let changeset = LiveChangeset<ID>(changes: changes, from: LiveResult<ID>(before), to: LiveResult<ID>(after))
        channel.deliver(.update(LiveQueryUpdate(changeset: changeset, result: LiveResult(after), path: .firstFetchCompleted,
                                                latency: start.duration(to: .now))))
    }

    /// The changes from a first screen to the whole result it is the beginning of: the rows
    /// after it, appended to its last section and in the sections that follow. O(rows added).
    static func appendedRows(from prefix: PublishedResult, to whole: PublishedResult) -> ListChanges {
        var changes = ListChanges()
        let shown = prefix.sectionCount
        guard shown > 0 else {
            changes.sectionInserts = Array(0..<whole.sectionCount)
            for section in 0..<whole.sectionCount {
                for item in 0..<whole.section(at: section).count { changes.itemInserts.append(ItemPath(section: section, item: item)) }
            }
            return changes
        }
        let last = shown - 1
        let grown = whole.section(at: last).count
        for item in prefix.section(at: last).count..<max(prefix.section(at: last).count, grown) {
            changes.itemInserts.append(ItemPath(section: last, item: item))
        }
        if whole.sectionCount > shown {
            changes.sectionInserts = Array(shown..<whole.sectionCount)
            for section in shown..<whole.sectionCount {
                for item in 0..<whole.section(at: section).count { changes.itemInserts.append(ItemPath(section: section, item: item)) }
            }
        }
        return changes
    }
}

/// A row as the refetch diff sees it: identity and content token.
struct Stamp<Key: Hashable>: ListElement, Hashable {
    var id: Key
    var token: UInt64
}
