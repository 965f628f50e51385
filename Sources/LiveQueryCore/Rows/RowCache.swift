import Foundation
import ListDiff

/// The rows behind a live query's result, loaded lazily in pages, cached by identity and version,
/// bounded in memory, and honest about what is loading or failed.
///
/// Ask for the rows of the visible range: what is cached comes back at once, and the missing
/// pages (the visible ones and `prefetch` rows on either side) are loaded with one query per page,
/// off the calling thread. When a page lands, `onRowsLoaded` receives its rowids, so exactly those
/// cells can be reconfigured.
///
/// ```swift
/// import GRDB
/// import LiveQuery
///
/// struct Preview: Sendable {
///     var sender: String
///     var subject: String
/// }
///
/// func previewCache(_ dbPool: DatabasePool) -> RowCache<Int64, Preview> {
///     let cache = RowCache(pageSize: 50, maximumPages: 40, loader: RowCache<Int64, Preview>.tableLoader(
///         reader: dbPool, table: "conversation", columns: ["sender", "subject"]) { row in
///             Preview(sender: row["sender"], subject: row["subject"]) })
///     cache.onRowsLoaded = { ids in Task { @MainActor in reconfigure(ids) } }
///     return cache
/// }
///
/// func visibleSlots(_ cache: RowCache<Int64, Preview>, after update: LiveQueryUpdate<Int64>,
///                   visibleRange: Range<Int>) -> [RowSlot<Int64, Preview>] {
///     cache.update(result: update.result)               // after every live query update
///     return cache.rows(in: visibleRange, prefetch: 40)
/// }
/// ```
///
/// Rows are cached by rowid and version: a row that moved keeps its content; a row whose version
/// changed is stale and reloads with its page's next request — unless the engine read it at its
/// commit: given a `committed` source (``CommittedLoader``), ``update(with:)`` holds the rows an
/// update changed at their new versions before the update reaches the list, so a visible row
/// that changed shows its new record in the same batch, without a placeholder or a page query.
/// A loader that answers row by row
/// (``RowLoader``) fails a row alone — a record that does not decode — and the rest of its page
/// shows: ``rowFailure(atPosition:)`` says why, with a retry. Thread-safe; callbacks arrive on an
/// arbitrary thread.
public final class RowCache<ID: LiveIdentity, Content: Sendable>: Sendable {
    /// Loads the content of rows by identity; rows missing from the answer no longer exist.
    public typealias Loader = @Sendable ([ID]) async throws -> [ID: Content]
    /// Loads the content of rows by identity, row by row: a row's failure (a record that does not
    /// decode) is its own, and a thrown error fails the page; rows missing from the answer no
    /// longer exist.
    public typealias RowLoader = @Sendable ([ID]) async throws -> [ID: Result<Content, any Error>]
    /// Makes the content of rows from what the live query's engine read at their commit, at the
    /// versions given, without reading the database (it runs on the thread that calls
    /// ``update(with:)``): rows it holds nothing for at that version are absent, and load with
    /// their page as any other. A row's failure (a record that does not decode) is its own.
    public typealias CommittedLoader = @Sendable ([LiveRow<ID>]) -> [ID: Result<Content, any Error>]

    /// Counters a developer can read.
    public struct Statistics: Sendable, Equatable {
        /// Page queries issued.
        public var pageQueries = 0
        /// Rows served from the cache.
        public var cacheHits = 0
        /// Pages' worth of rows evicted.
        public var evictions = 0
        /// Rows loaded by page queries.
        public var rowsLoaded = 0
        /// Page queries that failed.
        public var failedQueries = 0
        /// Rows that failed on their own (a row loader's failures).
        public var failedRows = 0
        /// Rows held from what the engine read at their commit (``update(with:)``), without a
        /// page query.
        public var rowsFromCommits = 0
    }

    private struct Entry {
        var version: UInt64
        var content: Content
    }

    /// Rows per page (one query each).
    public let pageSize: Int
    /// Pages' worth of rows kept at most.
    public let maximumPages: Int
    private let loader: RowLoader
    private let committed: CommittedLoader?
    /// Everything the cache changes, one `Locked` value.
    private let state = Locked(State())

    /// Creates a cache that loads rows with `loader`: a page's load succeeds or fails whole.
    /// `committed`, when given, makes the rows an update changed from what the engine read at
    /// their commit (see ``update(with:)``).
    public convenience init(pageSize: Int = 50, maximumPages: Int = 40, loader: @escaping Loader, committed: CommittedLoader? = nil) {
        self.init(pageSize: pageSize, maximumPages: maximumPages,
                  loader: { ids in try await loader(ids).mapValues { .success($0) } }, committed: committed)
    }

    /// Creates a cache that loads rows with `loader`, which answers row by row: a row that fails
    /// shows as failed on its own. `committed`, when given, makes the rows an update changed from
    /// what the engine read at their commit (see ``update(with:)``).
    public init(pageSize: Int = 50, maximumPages: Int = 40, loader: @escaping RowLoader, committed: CommittedLoader? = nil) {
        self.pageSize = max(1, pageSize)
        self.maximumPages = max(1, maximumPages)
        self.loader = loader
        self.committed = committed
    }

    /// Called with the identities of rows that just loaded (on an arbitrary thread).
    public var onRowsLoaded: (@Sendable ([ID]) -> Void)? {
        get { state.withLock { $0.callback } }
        set { state.withLock { $0.callback = newValue } }
    }

    /// Called when a page or the list changes state (loading, failed…), on an arbitrary thread.
    public var onStateChanged: (@Sendable () -> Void)? {
        get { state.withLock { $0.stateCallback } }
        set { state.withLock { $0.stateCallback = newValue } }
    }

    /// The counters so far.
    public var statistics: Statistics { state.withLock { $0.stats } }

    /// The number of rows held.
    public var cachedRowCount: Int { state.withLock { $0.entries.count } }

    /// Follows a new result: positions change, cached content stays (by identity); rows whose
    /// version changed become stale.
    ///
    /// - Complexity: O(1) (and O(f log n) for f rows that failed on their own): positions are
    ///   read from the new result when asked for.
    public func update(result: LiveResult<ID>) {
        state.withLock { state in
            state.result = result
            state.failures = [:]
            // A failed row that left the list is forgotten (O(failed rows × log n)).
            if !state.rowFailures.isEmpty { state.rowFailures = state.rowFailures.filter { result.position(of: $0.key) != nil } }
        }
    }

    /// Follows a live query's update as ``update(result:)`` does, and first holds the rows it
    /// changed — inserted, moved or reloaded, near the visible range or cached at an older
    /// version — at their new versions, made by the cache's ``CommittedLoader`` from what the
    /// engine read at the commit. Call it before the update reaches the list: a visible row that
    /// changed then shows its new record in the batch that reloads it, with no placeholder and no
    /// page query. Rows the engine holds nothing for (a refetch, a cache without a
    /// `committed` source) load with their page, as after ``update(result:)``.
    ///
    /// ```swift
    /// import LiveQuery
    ///
    /// func follow(_ query: LiveQuery<Int64>, _ cache: RowCache<Int64, String>) async {
    ///     for await event in query.events {
    ///         if case let .update(update) = event { cache.update(with: update) }   // then apply update.changeset
    ///     }
    /// }
    /// ```
    ///
    /// - Complexity: O(c log n) for c changes in a result of n rows, plus what the committed
    ///   loader costs for the rows it is asked for (at most the changed ones); nothing when the
    ///   cache has no committed loader or the update changes more than a cache's worth of rows.
    public func update(with update: LiveQueryUpdate<ID>) {
        self.update(result: update.result)
        guard let committed else { return }
        let result = update.result
        let changes = update.changeset.changes
        let changeCount = changes.itemInserts.count + changes.itemMoves.count + changes.itemReloads.count
        guard changeCount > 0, changeCount <= maximumPages * pageSize else { return }
        // The changed rows as the new result holds them: inserts and move destinations are paths
        // after the change, reloads paths before it.
        var changed: [LiveRow<ID>] = []
        changed.reserveCapacity(changeCount)
        for path in changes.itemInserts { changed.append(result.item(at: path)) }
        for move in changes.itemMoves { changed.append(result.item(at: move.to)) }
        if let before = update.changeset.before {
            for path in changes.itemReloads {
                if let position = result.position(of: before.item(at: path).id), let row = result.row(at: position) { changed.append(row) }
            }
        }
        let wanted = state.withLock { state -> [LiveRow<ID>] in
            // Rows cached at an older version, and rows within a page of what the list shows: the
            // ones a cell is about to read. Others load with their page if ever shown.
            let near = max(0, state.visible.lowerBound - pageSize) ..< state.visible.upperBound + pageSize
            var seen: Set<ID> = []
            return changed.filter { row in
                guard seen.insert(row.id).inserted, !state.isSettled(row) else { return false }
                if state.entries[row.id] != nil { return true }
                return result.position(of: row.id).map(near.contains) ?? false
            }
        }
        guard !wanted.isEmpty else { return }
        let made = committed(wanted)
        guard !made.isEmpty else { return }
        state.withLock { state in
            state.tick += 1
            for row in wanted {
                guard let answer = made[row.id] else { continue }
                switch answer {
                case let .success(content):
                    state.entries[row.id] = Entry(version: row.version, content: content)
                    state.rowFailures[row.id] = nil
                    state.lastUse[row.id] = state.tick
                    state.stats.rowsFromCommits += 1
                case let .failure(error):
                    state.stats.failedRows += 1
                    let id = row.id
                    state.rowFailures[id] = (row.version, LoadFailure(error, retry: { [weak self] in self?.retryRow(id) }))
                }
            }
            state.evictIfNeeded(pageSize: pageSize, maximumPages: maximumPages)
        }
    }

    /// The list's state: loading until a result is known, then empty or loaded.
    public var listState: LoadState {
        state.withLock { state in
            guard let result = state.result else { return .loading }
            return result.count == 0 ? .empty : .loaded
        }
    }

    /// The state of the section at `index` of the current result.
    public func sectionState(_ index: Int) -> LoadState {
        state.withLock { state in
            guard let result = state.result else { return .loading }
            guard index >= 0, index < result.sectionCount else { return .empty }
            return result.itemCount(inSection: index) == 0 ? .empty : .loaded
        }
    }

    /// The state of page `page` (positions `page * pageSize ..< (page + 1) * pageSize`).
    public func pageState(_ page: Int) -> PageState {
        state.withLock { $0.pageState(page, pageSize: pageSize) }
    }

    /// Why the row at flat `position` failed to load on its own (its record does not decode), with
    /// a retry; `nil` when it did not.
    ///
    /// - Complexity: O(log n).
    public func rowFailure(atPosition position: Int) -> LoadFailure? {
        state.withLock { state in
            guard let row = state.result?.row(at: position), let failed = state.rowFailures[row.id], failed.version == row.version else { return nil }
            return failed.failure
        }
    }

    /// The rows at flat positions `range`: cached content at once, placeholders for the rest,
    /// and page loads scheduled for the missing pages within `prefetch` rows of the range.
    ///
    /// - Complexity: O(log n + r + w) in a result of n rows, for r rows in `range` and w rows of
    ///   the pages within `prefetch` of it (each page is one index descent and a walk of its rows);
    ///   independent of how many rows are cached.
    public func rows(in range: Range<Int>, prefetch: Int = 0) -> [RowSlot<ID, Content>] {
        let (slots, loads) = state.withLock { state -> ([RowSlot<ID, Content>], [(page: Int, ids: [ID])]) in
            guard let result = state.result else { return ([], []) }
            let clamped = range.clamped(to: 0..<result.count)
            state.visible = clamped
            state.tick += 1
            var slots: [RowSlot<ID, Content>] = []
            slots.reserveCapacity(clamped.count)
            for row in result.rows(in: clamped) {
                if let entry = state.entries[row.id], entry.version == row.version {
                    state.lastUse[row.id] = state.tick
                    state.stats.cacheHits += 1
                    slots.append(.loaded(row, entry.content))
                } else {
                    slots.append(.placeholder(row))
                }
            }
            let wanted = max(0, clamped.lowerBound - prefetch) ..< min(result.count, clamped.upperBound + prefetch)
            var loads: [(page: Int, ids: [ID])] = []
            guard !wanted.isEmpty else { return (slots, loads) }
            for page in (wanted.lowerBound / pageSize)...((wanted.upperBound - 1) / pageSize) {
                guard state.inFlight[page] == nil, state.failures[page] == nil else { continue }
                let missing = result.rows(in: page * pageSize ..< (page + 1) * pageSize).filter { !state.isSettled($0) }
                guard !missing.isEmpty else { continue }
                let ids = missing.map(\.id)
                state.inFlight[page] = Dictionary(uniqueKeysWithValues: missing.map { ($0.id, $0.version) })
                state.stats.pageQueries += 1
                loads.append((page, ids))
            }
            return (slots, loads)
        }
        for load in loads { start(load.page, ids: load.ids) }
        if !loads.isEmpty { state.withLock { $0.stateCallback }?() }
        return slots
    }

    /// The content of row `id` if it is cached at `version`.
    public func content(of id: ID, version: UInt64) -> Content? {
        state.withLock { state in
            guard let entry = state.entries[id], entry.version == version else { return nil }
            return entry.content
        }
    }

    /// Waits until every load started so far has finished (tests, benchmarks, first screen).
    public func waitForLoads() async {
        while true {
            let pending = state.withLock { Array($0.tasks.values) }
            if pending.isEmpty { return }
            for task in pending { await task.value }
        }
    }

    /// Loads in flight now.
    public var loadsInFlight: Int { state.withLock { $0.tasks.count } }

    private func start(_ page: Int, ids: [ID]) {
        // The task is registered before it can finish, under the lock it removes itself with.
        state.withLock { state in
            let number = state.nextTask
            state.nextTask += 1
            state.tasks[number] = Task { [weak self] in
                guard let self else { return }
                do {
                    let loaded = try await loader(ids)
                    finish(page, ids: ids, loaded: loaded)
                } catch {
                    fail(page, ids: ids, error: error)
                }
                _ = self.state.withLock { $0.tasks.removeValue(forKey: number) }
            }
        }
    }

    private func finish(_ page: Int, ids: [ID], loaded: [ID: Result<Content, any Error>]) {
        let (announce, callback, stateCallback) = state.withLock { state -> ([ID], (@Sendable ([ID]) -> Void)?, (@Sendable () -> Void)?) in
            let versions = state.inFlight[page] ?? [:]
            state.inFlight[page] = nil
            state.failures[page] = nil
            state.tick += 1
            var announce: [ID] = []
            for id in ids {
                guard let answer = loaded[id], let version = versions[id] else { continue }
                switch answer {
                case let .success(content):
                    // A row an update held meanwhile at the version the result shows is newer
                    // than this page's answer: it stays.
                    if let held = state.entries[id], held.version != version, state.isCurrent(id, version: held.version) { continue }
                    // Stored at the version the page asked for: if the row changed meanwhile, it is
                    // stale and reloads with the next request.
                    state.entries[id] = Entry(version: version, content: content)
                    state.rowFailures[id] = nil
                    state.lastUse[id] = state.tick
                case let .failure(error):
                    state.stats.failedRows += 1
                    state.rowFailures[id] = (version, LoadFailure(error, retry: { [weak self] in self?.retryRow(id) }))
                }
                announce.append(id)
            }
            state.stats.rowsLoaded += announce.count(where: { state.rowFailures[$0] == nil })
            state.evictIfNeeded(pageSize: pageSize, maximumPages: maximumPages)
            return (announce, state.callback, state.stateCallback)
        }
        if !announce.isEmpty { callback?(announce) }
        stateCallback?()
    }

    private func fail(_ page: Int, ids: [ID], error: any Error) {
        let stateCallback = state.withLock { state -> (@Sendable () -> Void)? in
            state.inFlight[page] = nil
            state.stats.failedQueries += 1
            state.failures[page] = LoadFailure(error, retry: { [weak self] in self?.retry(page) })
            return state.stateCallback
        }
        stateCallback?()
    }

    /// Loads the row `id` again, after it failed on its own: its page's missing rows with it.
    public func retryRow(_ id: ID) {
        let load = state.withLock { state -> (page: Int, ids: [ID])? in
            state.rowFailures[id] = nil
            guard let result = state.result, let position = result.position(of: id) else { return nil }
            let page = position / pageSize
            guard state.inFlight[page] == nil else { return nil }
            let missing = result.rows(in: page * pageSize ..< (page + 1) * pageSize).filter { !state.isSettled($0) }
            guard !missing.isEmpty else { return nil }
            state.inFlight[page] = Dictionary(uniqueKeysWithValues: missing.map { ($0.id, $0.version) })
            state.stats.pageQueries += 1
            return (page, missing.map(\.id))
        }
        if let load { start(load.page, ids: load.ids) }
        state.withLock { $0.stateCallback }?()
    }

    /// Runs the failed load of `page` again (the rows it is made of now).
    public func retry(_ page: Int) {
        let ids = state.withLock { state -> [ID]? in
            guard state.failures[page] != nil, state.inFlight[page] == nil, let result = state.result else { return nil }
            state.failures[page] = nil
            let missing = result.rows(in: page * pageSize ..< (page + 1) * pageSize).filter { !state.isSettled($0) }
            guard !missing.isEmpty else { return nil }
            state.inFlight[page] = Dictionary(uniqueKeysWithValues: missing.map { ($0.id, $0.version) })
            let ids = missing.map(\.id)
            state.stats.pageQueries += 1
            return ids
        }
        if let ids { start(page, ids: ids) }
    }

    private struct State {
        var result: LiveResult<ID>?
        var entries: [ID: Entry] = [:]
        /// identity → last use, kept apart from the (generic) entries so that touching and
        /// evicting rows never copies their content.
        var lastUse: [ID: Int] = [:]
        var inFlight: [Int: [ID: UInt64]] = [:]     // page → rows being loaded, at the versions asked for
        var failures: [Int: LoadFailure] = [:]
        /// Rows whose load failed on their own, at the version that failed.
        var rowFailures: [ID: (version: UInt64, failure: LoadFailure)] = [:]
        var visible: Range<Int> = 0..<0
        var tick = 0
        var stats = Statistics()
        var callback: (@Sendable ([ID]) -> Void)?
        var stateCallback: (@Sendable () -> Void)?
        /// Loads in flight, removed as each finishes, so an app that never waits keeps no history.
        var tasks: [Int: Task<Void, Never>] = [:]
        var nextTask = 0

        func pageState(_ page: Int, pageSize: Int) -> PageState {
            if let failure = failures[page] { return .failed(failure) }
            if inFlight[page] != nil { return .loading }
            guard let result else { return .notLoaded }
            let rows = result.rows(in: page * pageSize ..< (page + 1) * pageSize)
            if rows.isEmpty { return .loaded }
            return rows.allSatisfy { isSettled($0) } ? .loaded : .notLoaded
        }

        /// Whether `row` is held at its version, or failed on its own at it (it is not loaded
        /// again until it changes or is retried).
        func isSettled(_ row: LiveRow<ID>) -> Bool {
            entries[row.id]?.version == row.version || rowFailures[row.id]?.version == row.version
        }

        /// Whether the current result holds row `id` at `version`.
        ///
        /// - Complexity: O(log n).
        func isCurrent(_ id: ID, version: UInt64) -> Bool {
            guard let result, let position = result.position(of: id) else { return false }
            return result.row(at: position)?.version == version
        }

        /// Keeps at most `maximumPages` pages of rows, dropping the least recently used first and
        /// never a visible row. When over the bound it drops a quarter of the cache at once (whole
        /// pages), so the sort by last use runs once per several page loads, not on every one.
        /// (An ordered dictionary would keep the order of use itself, but moving a row to its end
        /// on each use shifts the rows after it — O(n) a touch, where a tick here is O(1) and the
        /// sort is paid once per quarter of the cache.)
        mutating func evictIfNeeded(pageSize: Int, maximumPages: Int) {
            let limit = maximumPages * pageSize
            guard entries.count > limit, let result else { return }
            let visibleIDs = Set(result.rows(in: visible).map(\.id))
            let candidates = lastUse.filter { !visibleIDs.contains($0.key) }.sorted { $0.value < $1.value }
            let target = max(pageSize, limit - max(pageSize, (limit / 4 / pageSize) * pageSize))
            let excess = entries.count - target
            let evicted = min(excess, candidates.count)
            for (id, _) in candidates.prefix(evicted) {
                entries[id] = nil
                lastUse[id] = nil
            }
            stats.evictions += (evicted + pageSize - 1) / pageSize
        }
    }
}
