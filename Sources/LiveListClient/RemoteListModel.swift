import ListDiff
import LiveListWire

/// A remote list's state as the server's messages change it, without I/O: the current state,
/// its version, the window the server tracks, and the records of the window's rows. Each message
/// becomes the event a presenter applies — a reset is a first state, a changeset is applied as
/// sent (never diffed), and rows that arrive for unloaded positions are a reload of exactly
/// those positions.
public struct RemoteListModel: Sendable {
    /// The current state.
    public internal(set) var state: RemoteListState
    /// The version of `state` (`nil` before the first reset).
    public internal(set) var version: WireVersion?
    /// The column names of the records.
    public private(set) var columns: [String] = []
    /// How the server orders the list, when it states it (the last reset's `order`): compare a
    /// row it has not sent with the rows held to find where it will stand.
    public internal(set) var order: WireOrder?
    /// How the server's published mutations change the list, when it states it (the last reset's
    /// `effects`, or the answer to new arguments'): what a mutation the app describes no effect
    /// for shows while it waits (``RemoteMutator/mutate(_:arguments:showingIn:expecting:)``).
    public internal(set) var effects: WireEffects?
    /// The window the server sends rows for.
    public private(set) var window: Range<Int> = 0..<0
    /// When the server saw the last commit applied, in microseconds since 1970 on its clock
    /// (``WireChanges/observedAt``): subtract it from the time of the screen's update to show
    /// commit→screen latency, when the clocks agree.
    public internal(set) var lastObservedAt: Int64?
    /// Why the server last sent the whole window again (`subscribed` for a first state).
    public private(set) var lastResetReason: WireResetReason?
    /// A window asked for and not yet answered.
    public private(set) var requestedWindow: Range<Int>?
    var records: [WireValue: (version: UInt64, values: [WireValue])] = [:]
    private var nextVersion: UInt64 = 1
    private let source: UInt64
    private var generation: UInt64 = 0

    /// What a message did.
    public enum Output: Sendable {
        /// A new first state (a reset): show it with one reload.
        case initial(RemoteListState)
        /// A change from the state before; `loaded` rows kept their identity and version and
        /// received their records with it (their cells are reconfigured, not reloaded).
        case changes(Changeset<RemoteSection, RemoteRow>, loaded: [RemoteRowID])
        /// Records arrived for rows already shown with their identity.
        case rowsLoaded([RemoteRowID])
        /// The answer to the client's `sync` number `id`: the list holds every commit made
        /// before it.
        case synced(id: Int)
        /// Nothing to show.
        case none
    }

    /// An empty model.
    public init() {
        var generator = SystemRandomNumberGenerator()
        source = generator.next()
        state = RemoteListState(keys: [], counts: [], known: [:], stateID: ListStateID(source: source, generation: 0))
    }

    /// The record of `row` if it is held for the row's current content.
    public func record(for row: RemoteRow) -> RemoteRecord? {
        guard case let .row(id) = row.id, let record = records[id], record.version == row.version else { return nil }
        return RemoteRecord(id: id, columns: columns, values: record.values)
    }

    /// What a resuming client holds: its version and the longest run of its window's rows held
    /// with their content.
    public var resume: WireResume? {
        guard let version else { return nil }
        var best = 0..<0
        var runStart: Int?
        let range = window.clamped(to: 0..<state.count)
        for position in range {
            if record(for: state.row(at: position)) != nil {
                if runStart == nil { runStart = position }
                if let start = runStart, position + 1 - start > best.count { best = start..<position + 1 }
            } else {
                runStart = nil
            }
        }
        return WireResume(version: version, held: WireWindow(best))
    }

    /// Notes that the client asked the server for `window`.
    public mutating func didRequest(window: Range<Int>) {
        requestedWindow = window
    }

    /// Notes that the client subscribed (again) with `window`: the server now sends the rows of
    /// that window, and the rows the client keeps must be those (read ``resume`` before).
    public mutating func didSubscribe(window: Range<Int>) {
        self.window = window
        requestedWindow = nil
    }

    /// Applies one message for this list's subscription.
    ///
    /// - Complexity: O(c log c + w + s) for c changes, w rows of the window and s sections.
    public mutating func receive(_ message: ServerMessage) throws(RemoteListError) -> Output {
        switch message {
        case let .reset(reset): return receive(reset)
        case let .changes(changes): return try receive(changes)
        case let .rows(rows): return try receive(rows)
        case let .error(error): throw .server(error)
        case let .synced(synced):
            guard synced.version == version else { throw .versionGap(expected: version, received: synced.version) }
            return .synced(id: synced.id)
        case .mutated:
            return .none   // The connection's, not the list's: a `RemoteMutator` takes it.
        }
    }

    /// The list held, as a `reset` at its version: its sections and counts, the window, and the
    /// rows of the window the client holds (with their values when it has them); `nil` before the
    /// first state.
    ///
    /// - Complexity: O(w + s) for w rows of the window and s sections.
    public func heldList(sub: Int = 0) -> WireReset? {
        guard let version else { return nil }
        let range = window.clamped(to: 0..<state.count)
        var rows: [WireRow] = []
        rows.reserveCapacity(range.count)
        for position in range {
            let row = state.row(at: position)
            guard case let .row(id) = row.id else { continue }
            rows.append(WireRow(position: position, id: id, values: record(for: row)?.values))
        }
        return WireReset(sub: sub, version: version, reason: lastResetReason ?? .subscribed, columns: columns,
                         sections: zip(state.keys, state.counts).map { WireSection(key: $0, count: $1) },
                         window: WireWindow(window), rows: rows, order: order, effects: effects)
    }

    /// Takes in a list held before (``heldList(sub:)``) as a first state.
    mutating func restore(_ list: WireReset) -> Output { receive(list) }

    mutating func nextStateID() -> ListStateID {
        generation += 1
        return ListStateID(source: source, generation: generation)
    }

    /// A server row's new content version: counted from 2, far below the pending rows' top bit
    /// (``RemoteRow/pendingVersions``).
    mutating func freshVersion() -> UInt64 {
        nextVersion += 1
        return nextVersion
    }

    private mutating func receive(_ reset: WireReset) -> Output {
        columns = reset.columns
        order = reset.order
        effects = reset.effects
        lastResetReason = reset.reason
        window = reset.window.range ?? 0..<0
        requestedWindow = nil
        version = reset.version
        let counts = reset.sections.map(\.count)
        let total = counts.reduce(0, +)
        var known: [Int: RemoteRow] = [:]
        var kept: [WireValue: (version: UInt64, values: [WireValue])] = [:]
        for row in reset.rows where row.position < total {
            let version = freshVersion()
            known[row.position] = RemoteRow(id: .row(row.id), version: version)
            if let values = row.values { kept[row.id] = (version, values) }
        }
        records = kept
        state = RemoteListState(keys: reset.sections.map(\.key), counts: counts, known: known, stateID: nextStateID())
        return .initial(state)
    }

    private mutating func receive(_ rows: WireRows) throws(RemoteListError) -> Output {
        guard rows.version == version else { throw .versionGap(expected: version, received: rows.version) }
        if let range = rows.window.range {
            window = range
            if requestedWindow == range { requestedWindow = nil }
        }
        var known = state.known
        var reloads: [ItemPath] = []
        var loaded: [RemoteRowID] = []
        for row in rows.rows {
            guard let path = state.path(ofPosition: row.position) else { throw .inconsistent("row at \(row.position) of \(state.count)") }
            let existing = known[row.position]
            let version: UInt64
            if let existing, existing.id == .row(row.id) {
                version = existing.version
                if row.values != nil { loaded.append(existing.id) }
            } else {
                version = freshVersion()
                known[row.position] = RemoteRow(id: .row(row.id), version: version)
                reloads.append(path)
            }
            if let values = row.values { records[row.id] = (version, values) }
        }
        guard !reloads.isEmpty else { return loaded.isEmpty ? .none : .rowsLoaded(loaded) }
        known = pruned(known, count: state.count)
        let before = state
        state = RemoteListState(keys: state.keys, counts: state.counts, known: known, stateID: nextStateID())
        var changes = ListChanges()
        changes.itemReloads = reloads
        return .changes(Changeset(changes: changes, from: before, to: state), loaded: loaded)
    }

    /// The rows held, by identity: their values for their current content (`nil`: not loaded).
    /// - Complexity: O(w) for a window of w rows.
    var heldRows: [WireValue: [WireValue]?] {
        var rows: [WireValue: [WireValue]?] = [:]
        for row in state.known.values {
            guard case let .row(id) = row.id else { continue }
            rows[id] = record(for: row)?.values
        }
        return rows
    }

    /// Keeps the rows of the window (and of a window asked for) and their records.
    mutating func pruned(_ known: [Int: RemoteRow], count: Int) -> [Int: RemoteRow] {
        let keep = window.clamped(to: 0..<count)
        let asked = requestedWindow?.clamped(to: 0..<count) ?? 0..<0
        let kept = known.filter { keep.contains($0.key) || asked.contains($0.key) }
        var ids = Set<WireValue>()
        for row in kept.values { if case let .row(id) = row.id { ids.insert(id) } }
        records = records.filter { ids.contains($0.key) }
        return kept
    }
}
