import Foundation
import ListDiff
import ListPresenter
import LiveListWire

/// A published query of a `livelist serve` server, followed live with the shape of a local
/// live query: a first state, then every commit's changeset as the server sent it (no diff on
/// the client), failures with a retry; the rows of the window the list shows, loaded as it
/// scrolls, and placeholders for the rest. It reconnects with backoff and resumes from its
/// version: the server sends the changes missed, composed into one, or a reset.
///
/// Give its events to a `ListCellSource` and its ``records`` as the cell source's records:
///
/// ```swift
/// import ListPresenter
/// import ListTesting
/// import LiveListClient
/// import LiveListWire
///
/// @MainActor
/// func show(in view: HeadlessListView<RemoteRow, RemoteSection>) -> (RemoteLiveQuery, ListCellSource<RemoteSection, RemoteRow, RemoteRecord>) {
///     let remote = RemoteLiveQuery(url: "ws://127.0.0.1:8080/live", query: "inbox", arguments: ["folder": .text("work")])
///     let presenter = ListPresenter<RemoteSection, RemoteRow>()
///     let cells = ListCellSource(presenter: presenter, records: remote.records)
///     remote.onEvent = { cells.receive($0) }
///     cells.setTarget(view)
///     remote.start()
///     return (remote, cells)
/// }
/// ```
@MainActor
public final class RemoteLiveQuery {
    /// Where the connection stands.
    public enum ConnectionState: Sendable, Equatable {
        /// Not started.
        case idle
        /// The first connection is being opened.
        case connecting
        /// Subscribed: messages flow.
        case live
        /// The connection failed; the next attempt is under way or waiting.
        case reconnecting(attempt: Int, reason: String)
        /// The server refused the subscription (unknown query, bad arguments…): no retry.
        case refused(WireError)
        /// ``RemoteLiveQuery/stop()`` was called.
        case stopped
    }

    /// The server's WebSocket endpoint (`ws://HOST:PORT/live`).
    public var url: String { session.url }
    /// The connection it follows on, shared with the lists and mutators made on the same session.
    public let session: RemoteSession
    /// The published query's name.
    public let query: String
    /// Its arguments; ``setArguments(_:)`` changes them.
    public private(set) var arguments: [String: WireValue]
    /// Rows loaded beyond the visible ones on either side.
    public var prefetch: Int
    /// The list as the server's messages made it.
    public private(set) var model = RemoteListModel()
    /// The list shown: the server's (``model``'s state) with the app's pending changes laid over
    /// the rows held (``showPending(_:)``); the server's own while none shows.
    public var displayedState: RemoteListState { shown.displayed }
    /// When the list shown was held, while it is a snapshot restored by ``restore(_:)`` that the
    /// server has not brought up to date yet (`nil` once it has: the list is live).
    public var staleSince: Date? { standing.staleSince }
    /// The failure shown and how fresh the rows are.
    private var standing = ListStanding()
    /// Pending changes shown and not withdrawn yet.
    public var pendingChangesCount: Int { overlay.entries.count }
    /// Where the connection stands now; the records' `onStateChanged` hears of every change.
    public private(set) var connectionState: ConnectionState = .idle {
        didSet { records.onStateChanged?() }
    }
    /// Receives every event, in order, on the main actor (besides the subscribers of
    /// ``subscribe(_:)``).
    public var onEvent: ((ListSourceEvent<RemoteSection, RemoteRow>) -> Void)?
    private let receivers = ListSourceReceivers<RemoteSection, RemoteRow>()
    /// The rows' records, for a `ListCellSource`.
    public private(set) lazy var records = RemoteRecords(query: self)
    /// Messages applied so far (for status lines and tests).
    public private(set) var messagesApplied = 0
    /// Resets received so far: the first state, and every time the server could not send the
    /// changes since the client's version (a resume that composed them is not one).
    public private(set) var resetsReceived = 0

    /// Whether it is on the session (started, not stopped or refused): one state, no flag beside it.
    private var attached: Bool {
        switch connectionState {
        case .connecting, .live, .reconnecting: true
        case .idle, .refused, .stopped: false
        }
    }
    /// The session's connection, once this list subscribed on it.
    private var connection: RemoteConnection? { attached ? session.connection : nil }
    /// The subscription's number, whether it was answered, the arguments to go back to.
    private var subscription = RemoteSubscription()
    private var sub: Int { subscription.sub }
    private var wanted: Range<Int>
    /// ``upToDate()`` calls waiting for their `synced`, by `sync` id.
    private var syncs = SyncWaiters<CheckedContinuation<Void, any Error>>()
    private var overlay = PendingOverlay()
    /// What the presenter was last handed.
    private var shown = PendingOverlay.Resolved.plain(RemoteListModel().state)

    /// A remote query of `query` with `arguments` on the server at `url`, showing `window` first,
    /// on a connection of its own.
    public convenience init(url: String, query: String, arguments: [String: WireValue] = [:], window: Range<Int> = 0..<100,
                            prefetch: Int = 40, transport: any RemoteTransport = WebSocketTransport()) {
        self.init(session: RemoteSession(url: url, transport: transport), query: query, arguments: arguments, window: window, prefetch: prefetch)
    }

    /// A remote query of `query` with `arguments` on `session`'s server, showing `window` first:
    /// it subscribes on the session's connection, beside the other lists and mutators on it.
    public init(session: RemoteSession, query: String, arguments: [String: WireValue] = [:], window: Range<Int> = 0..<100,
                prefetch: Int = 40) {
        self.session = session
        self.query = query
        self.arguments = arguments
        self.prefetch = prefetch
        wanted = window
    }

    /// Connects (or joins the session's connection), subscribes, and keeps following —
    /// resubscribing after every lost connection — until ``stop()``.
    public func start() {
        guard !attached else { return }
        // Connecting from now on: an `upToDate()` called right after waits for the first
        // connection instead of finding the query idle.
        connectionState = .connecting
        session.attach(self)
    }

    /// Unsubscribes (the session's connection closes once nothing else uses it); the list keeps
    /// its last state.
    public func stop() {
        if let connection { connection.send(ClientMessage.unsubscribe(sub: sub).encoded()) }
        connectionState = .stopped
        session.detach(self)
        failSyncs(CancellationError())
    }

    /// New arguments (a new filter or sort), one call: the server moves the subscription and
    /// sends one changeset from the list shown to the list of the new arguments — animated like
    /// any commit — or a reset when they differ by more than a reset costs.
    public func setArguments(_ arguments: [String: WireValue]) {
        guard arguments != self.arguments else { return }
        subscription.argumentsChanged(from: self.arguments)
        self.arguments = arguments
        guard connectionState == .live, let connection else { return }
        connection.send(ClientMessage.arguments(sub: sub, arguments).encoded())
    }

    /// The list held, to show again before the server is reached (``restore(_:)``): its version,
    /// sections and counts, and the rows of its window with their values — the pending changes
    /// left out — held as of the last message from the server (``RemoteListSnapshot/savedAt``).
    /// `nil` before the first state.
    ///
    /// - Complexity: O(w + s) for w rows of the window and s sections.
    public func snapshot() -> RemoteListSnapshot? {
        guard let list = model.heldList() else { return nil }
        return RemoteListSnapshot(query: query, arguments: arguments, list: list, savedAt: standing.savedAt(now: Date()))
    }

    /// Shows `snapshot` as the list's first state, stale (``staleSince``), before ``start()``:
    /// an app launched without a network shows its last list in its first frame. Once started,
    /// the query resumes from the snapshot's version, so the server sends the changes since, in
    /// one changeset (or a reset when it no longer has that version).
    ///
    /// Throws when the query has started or holds a list already, or when `snapshot` is of
    /// another query or other arguments; nothing changes then.
    ///
    /// - Complexity: O(w + s) for w rows held and s sections.
    public func restore(_ snapshot: RemoteListSnapshot) throws(RemoteListRestoreError) {
        guard connectionState == .idle, model.version == nil else { throw .started }
        guard snapshot.query == query else { throw .otherQuery(snapshot.query) }
        guard snapshot.arguments == arguments else { throw .otherArguments }
        _ = model.restore(snapshot.list)
        if !model.window.isEmpty { wanted = model.window }
        standing.restored(savedAt: snapshot.savedAt)
        records.onStateChanged?()
        send(.initial(AnySectionedList(resolveShown().displayed)))
    }

    /// Shows `changes` at once over the list, marked pending, after those shown before — a
    /// mutation's expected effect (``RemoteMutator/mutate(_:arguments:showingIn:expecting:)``
    /// shows and withdraws them itself). They stay laid over every state the server sends until
    /// ``withdrawPending(_:)``; a change the server's list already shows does nothing, so the
    /// commit that carries it turns the pending row into the server's in the same changeset.
    ///
    /// - Complexity: O(w + p·w) on the main actor for w rows held and p changes pending.
    public func showPending(_ changes: [PendingChange]) -> PendingChangesID {
        let id = overlay.add(changes)
        reshow(through: nil)
        return id
    }

    /// Shows `changes` derived from the server's stated effects: all of them, each as stated, or
    /// none (a row whose place is not known among the rows held would not be where the commit
    /// puts it).
    func showDerived(_ changes: [PendingChange]) -> PendingChangesID {
        let id = overlay.add(changes, exact: true)
        reshow(through: nil)
        return id
    }

    /// Takes back the pending changes `id`: the list shows the server's rows in their place, in
    /// one changeset.
    public func withdrawPending(_ id: PendingChangesID) {
        guard overlay.remove(id) else { return }
        reshow(through: nil)
    }

    /// The record shown for `row`: its pending values, or the server's.
    func record(for row: RemoteRow) -> RemoteRecord? {
        if case let .row(id) = row.id, let pending = shown.records[id], pending.version == row.version {
            return RemoteRecord(id: id, columns: model.columns, values: pending.values, isPending: true)
        }
        return model.record(for: row)
    }

    /// Lays the pending changes over the model's state: what the presenter is handed next.
    @discardableResult
    private func resolveShown() -> PendingOverlay.Resolved {
        shown = overlay.resolve(over: model) { model.nextStateID() }
        return shown
    }

    /// Lays the pending changes over the server's state again and hands the presenter the change
    /// from what it shows, the server's state having gone through `server`.
    private func reshow(through server: Changeset<RemoteSection, RemoteRow>?) {
        let old = shown
        resolveShown()
        if old.isPlain, shown.isPlain {
            if let server { send(.changes(server)) }
            return
        }
        guard old.displayed.stateID != shown.displayed.stateID else { return }
        let changes = PendingOverlay.transition(from: old, through: server?.changes, to: shown)
        send(.changes(Changeset(changes: changes, from: old.displayed, to: shown.displayed)))
    }

    /// Makes sure the rows at `positions` and ``prefetch`` around them are sent; asks the
    /// server for a new window when they are not all in the current one.
    public func showRows(at positions: Range<Int>) {
        let start = max(0, positions.lowerBound - prefetch)
        let wanted = start..<max(start, positions.upperBound + prefetch)
        let current = model.requestedWindow ?? model.window
        let needed = wanted.clamped(to: 0..<model.state.count)
        guard !needed.isEmpty, !current.covers(needed) else { return }
        self.wanted = wanted
        guard connectionState == .live, let connection else { return }
        model.didRequest(window: wanted)
        connection.send(ClientMessage.window(sub: sub, WireWindow(wanted)).encoded())
    }

    /// The connection went: the looks waiting fail, and the list shows the failure once per outage.
    private func lost(_ reason: String, attempt: Int) {
        failSyncs(RemoteListError.connection(reason))
        connectionState = .reconnecting(attempt: attempt, reason: reason)
        if attempt == 1 {
            let failure = LoadFailure(RemoteListError.connection(reason), retry: {})
            standing.failed(failure)
            send(.failure(failure))
        }
    }

    private func subscribe(on connection: RemoteConnection) {
        subscription.subscribe(as: session.subscriptionNumber(for: self))
        let request = WireSubscription(sub: sub, query: query, arguments: arguments, window: WireWindow(wanted), resume: model.resume)
        // The server sends the rows of this window from now on; rows the client kept elsewhere
        // would never be brought up to date.
        model.didSubscribe(window: wanted)
        connection.send(ClientMessage.subscribe(request).encoded())
        resendSyncs(on: connection)
    }

    /// Asks again for the looks still waiting: a new subscription never hears of the old one's.
    private func resendSyncs(on connection: RemoteConnection) {
        for id in syncs.ids { connection.send(ClientMessage.sync(sub: sub, id: id).encoded()) }
    }

    /// Applies one message of the subscription.
    private func receive(_ message: ServerMessage, on connection: RemoteConnection) {
        guard message.sub == sub else { return }   // a subscription given up
        do {
            let output = try model.receive(message)
            messagesApplied += 1
            // A reset after dropped frames (a slow client): a `synced` may have gone with them.
            if subscription.applied(message) { resendSyncs(on: connection) }
            if connectionState != .live { connectionState = .live }
            // The server's messages flow again: whatever failed (the connection, a read of the
            // query) is over, for the placeholders and for subscribers to come.
            if standing.applied(at: Date()) { records.onStateChanged?() }
            deliver(output)
        } catch {
            recover(from: error, on: connection)
        }
    }

    private func deliver(_ output: RemoteListModel.Output) {
        switch output {
        case .initial:
            resetsReceived += 1
            send(.initial(AnySectionedList(resolveShown().displayed)))
        case let .changes(changeset, loaded):
            reshow(through: changeset)
            if !loaded.isEmpty { records.onRowsLoaded?(loaded) }
        case let .rowsLoaded(ids):
            // Rows now held with their values may give a pending row its place.
            if !overlay.isEmpty { reshow(through: nil) }
            records.onRowsLoaded?(ids)
        case let .synced(id): syncs.answer(id)?.resume()
        case .none: break
        }
        if let requested = model.requestedWindow, requested != wanted { return }
        if wanted != model.window, model.requestedWindow == nil, let connection {
            model.didRequest(window: wanted)
            connection.send(ClientMessage.window(sub: sub, WireWindow(wanted)).encoded())
        }
    }

    private func recover(from error: RemoteListError, on connection: RemoteConnection) {
        switch subscription.recovery(from: error) {
        case .reconnect:
            // This server has not reached the version the list holds (another showed it): connect
            // again, with backoff — behind a load balancer, perhaps to another one.
            session.reconnect()
        case let .goOn(restoring, failsSyncs):
            if let restoring { arguments = restoring }
            let failure = LoadFailure(error, retry: {})
            standing.failed(failure)
            // A failed read fails the looks waiting (the server answers a failed look so too).
            if failsSyncs { failSyncs(error) }
            send(.failure(failure))
        case let .refused(wireError):
            // The subscription is over (the server ended it); the connection stays for the others.
            connectionState = .refused(wireError)
            session.detach(self)
            failSyncs(error)
            let failure = LoadFailure(error, retry: { [weak self] in Task { @MainActor in self?.restart() } })
            standing.failed(failure)
            send(.failure(failure))
        case let .resubscribe(startOver):
            // Start the subscription over: a gap resumes from the version held, a contradiction resets.
            if startOver {
                model = RemoteListModel()
                // The presenter's next state is the reset's, shown whole.
                shown = .plain(model.state)
            }
            connection.send(ClientMessage.unsubscribe(sub: sub).encoded())
            subscribe(on: connection)
        }
    }

    /// Hands `event` to ``onEvent`` and every subscriber.
    private func send(_ event: ListSourceEvent<RemoteSection, RemoteRow>) {
        onEvent?(event)
        receivers.send(event)
    }

    private func failSyncs(_ error: any Error) {
        for waiter in syncs.takeAll() { waiter.resume(throwing: error) }
    }

    private func restart() {
        stop()
        start()
    }

    /// The server's position of displayed position `position`.
    func serverPosition(ofDisplayed position: Int) -> Int { shown.serverPosition(ofDisplayed: position) }

    /// The placeholder of rows not yet sent.
    var placeholderState: PlaceholderState {
        if let failure = standing.failure { return .failed(failure) }
        return .loading
    }
}

extension RemoteLiveQuery: SessionMember {
    func session(connectedOn connection: RemoteConnection) {
        subscribe(on: connection)
    }

    func session(lost reason: String, attempt: Int) {
        lost(reason, attempt: attempt)
    }

    func session(received message: ServerMessage, on connection: RemoteConnection) {
        receive(message, on: connection)
    }

    /// Whether `mutated`, answered on this list's connection, says the list holds its commit:
    /// the server sends it after the commit's changes to every subscription of the connection.
    func holdsCommit(of mutated: WireMutated, on session: RemoteSession) -> Bool {
        self.session === session && connection != nil && mutated.versions[sub] != nil
    }
}

extension RemoteLiveQuery: ListSource {
    public typealias SectionModel = RemoteSection
    public typealias Item = RemoteRow
    public typealias Record = RemoteRecord

    /// Hands every event from now on to `receive`: first the list held (a loading one before the
    /// first message), then what the server's messages make of it.
    public func subscribe(_ receive: @escaping @MainActor (ListSourceEvent<RemoteSection, RemoteRow>) -> Void) -> ListSourceSubscription {
        receive(.initial(AnySectionedList(shown.displayed), isComplete: model.version != nil))
        if let failure = standing.failure { receive(.failure(failure)) }
        return receivers.add(receive)
    }

    /// Asks the server to look for every commit made before the call (other processes' too)
    /// and returns once the list holds what they changed — one `sync` message, answered by
    /// `synced` after the changes. Before the subscription is live, the look is asked for as soon
    /// as it is. Throws ``RemoteListError`` when the connection goes or the server's look fails
    /// first (call again), `CancellationError` after ``stop()``.
    public func upToDate() async throws -> ListStateID? {
        switch connectionState {
        case .idle, .stopped: throw RemoteListError.connection("not started")
        case let .refused(error): throw RemoteListError.server(error)
        case .connecting, .reconnecting, .live: break
        }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let id = syncs.add(continuation)
            // A connection is set once its subscription request is sent: the server answers in order.
            if let connection {
                connection.send(ClientMessage.sync(sub: sub, id: id).encoded())
            }
        }
        return shown.displayed.stateID
    }
}

extension Range where Bound == Int {
    /// Whether every position of `other` is in this range.
    func covers(_ other: Range<Int>) -> Bool { lowerBound <= other.lowerBound && other.upperBound <= upperBound }
}
