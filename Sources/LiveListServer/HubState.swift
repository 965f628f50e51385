import Foundation
import ListDiff
import LiveListWire
import LiveQueryCore
import Logging
import NIOCore

/// The state of one shared live query, changed in order by one task: the current result and its
/// version, the recent changesets (for resuming clients), the subscribers and their windows, and
/// the row contents read lately.
final class HubState {
    /// One commit's changes, kept for resuming clients: the changes and the shape of the
    /// result they lead from — not the result (its rows would pin a copy of every node the
    /// commit changed, kilobytes a commit on a large list).
    final class Buffered: Weighed {
        /// The version the changeset leads from.
        let from: UInt64
        /// The identity of the state the changes lead from (positioned versions ask the query
        /// whether it is the result at a client's position).
        let fromState: ListStateID?
        /// The sections and counts of that state.
        let old: LiveResultShape
        let changes: ListChanges
        /// What keeping it costs: the changes' bytes, and those of `old`'s sections the state
        /// after it does not share.
        let bytes: Int

        init(from: UInt64, fromState: ListStateID?, old: LiveResultShape, changes: ListChanges, bytes: Int) {
            self.from = from
            self.fromState = fromState
            self.old = old
            self.changes = changes
            self.bytes = bytes
        }
    }

    let query: any ServedLiveQuery
    let versions: HubVersions
    let configuration: LiveListServer.Configuration
    /// Held while a commit is queued for every subscriber: one hop per event loop.
    let writers: LoopWriters
    /// The server's count of what resume keeps, told of every change to ``buffer``.
    let gauge: ResumeGauge
    /// Counts what resuming clients get.
    let observer: HubObserver
    let logger: Logger
    let onTerminal: @Sendable () -> Void
    /// Feeds an input to this loop after a delay (a retry).
    let schedule: @Sendable (Hub.Input, Duration) -> Void

    /// Where the hub is: before the live query's first result, with the inputs that need it
    /// waiting in arrival order; or following, with the result every subscriber is brought to.
    enum Phase {
        case awaitingFirstResult(deferred: [Hub.Input])
        case following(LiveResult<SQLValue>)
    }

    private(set) var phase = Phase.awaitingFirstResult(deferred: [])
    /// The result every subscriber is brought to; `nil` before the first.
    var result: LiveResult<SQLValue>? {
        if case let .following(result) = phase { return result }
        return nil
    }
    /// The changesets kept for resuming clients, oldest first (references: dropping the first
    /// moves a pointer per entry).
    private(set) var kept: ResumeBuffer<Buffered>
    /// The version the subscribers hold, the changesets counted, the last commit's time.
    private(set) var clock: HubVersionState
    /// The subscribers, with their windows, and grouped as a commit is sent to them.
    var subscriptions = HubSubscriptions<Subscriber>()
    /// Rows of the current result sent without their values (they changed again before they
    /// were read): every later message brings them to the windows that show them, until a read
    /// finds them as the result holds them — a row changed and changed back within one commit's
    /// reach gets no reload of its own.
    private var unresolved: Set<SQLValue> = []
    /// Resuming subscribers that wait for this server to catch up with their version.
    var pendingResumes: Set<ObjectIdentifier> = []
    /// `sync`s waiting for their state: reached once the hub's result was it or went past it.
    private var pendingSyncs = PendingSyncs<(subscriber: Subscriber, reply: SyncReply)>()
    let payloads: PayloadCache

    init(query: any ServedLiveQuery, versions: HubVersions, configuration: LiveListServer.Configuration,
         writers: LoopWriters, gauge: ResumeGauge, observer: HubObserver, logger: Logger, onTerminal: @escaping @Sendable () -> Void,
         schedule: @escaping @Sendable (Hub.Input, Duration) -> Void) {
        self.gauge = gauge
        self.observer = observer
        self.query = query
        self.versions = versions
        self.configuration = configuration
        self.writers = writers
        self.logger = logger
        self.onTerminal = onTerminal
        self.schedule = schedule
        payloads = PayloadCache(query: query, capacity: configuration.payloadCacheRows)
        kept = ResumeBuffer(maximumCount: configuration.resumeBufferSize, maximumBytes: configuration.resumeBufferBytes)
        clock = HubVersionState(epoch: versions.epoch, isPositioned: versions.isPositioned)
    }

    /// The changesets delivered so far.
    var sequence: UInt64 { clock.sequence }
    /// When the live query saw the last commit, in microseconds since 1970 (the `at` of changes).
    var observedAt: Int64? { clock.observedAt }

    /// The changesets kept for resuming clients, oldest first.
    var buffer: [Buffered] { kept.entries }

    /// The version of the current result (the first result's before it is there).
    var version: WireVersion { clock.version }

    /// The version of a result the engine delivered: its position (positioned), or the number of
    /// changesets so far (counted).
    func version(at position: UInt64?) -> WireVersion { clock.version(at: position) }

    func handle(_ input: Hub.Input) async {
        await apply(input)
        if !pendingSyncs.isEmpty { answerSyncs() }
    }

    private func apply(_ input: Hub.Input) async {
        switch input {
        case let .event(event):
            await handle(event)
            observer.handled()
        case let .subscribe(subscriber, window, resume):
            guard !deferredUntilFirstResult(input) else { return }
            await subscribe(subscriber, window: window, resume: resume)
        case let .resubscribe(subscriber, window, resume, attempt):
            // Still wanted: not unsubscribed (or moved) meanwhile.
            guard pendingResumes.remove(subscriber.key) != nil else { return }
            await subscribe(subscriber, window: window, resume: resume, attempt: attempt)
        case let .switchIn(subscriber, window, from):
            guard !deferredUntilFirstResult(input) else { return }
            await switchIn(subscriber, window: window, from: from)
        case let .detach(subscriber, reply):
            dropDeferred(of: subscriber)
            pendingResumes.remove(subscriber.key)
            guard let result, let subscription = subscriptions.remove(subscriber.key) else {
                reply.resume(returning: nil)
                return
            }
            reply.resume(returning: Detached(result: result, version: version, window: subscription.window))
        case let .window(subscriber, window): await move(subscriber, to: window)
        case let .unsubscribe(subscriber):
            pendingResumes.remove(subscriber.key)
            subscriptions.remove(subscriber.key)
            dropDeferred(of: subscriber)
        case let .acknowledge(subscriber):
            guard subscriptions.contains(subscriber.key) else { return }
            subscriber.send(body: ServerMessage.changes(WireChanges(sub: 0, from: version, to: version, changes: ListChanges(), insertedSectionKeys: [],
                                                                    insertedIDs: [], movedIDs: [], reloadedIDs: [], rows: [])).encodedBody(),
                            version: version)
        case let .sync(subscriber, reply, state):
            guard !deferredUntilFirstResult(input) else { return }
            // Looked up in what the hub kept once, at arrival; later results mark it as they pass it.
            let reached = state.map { state in self.result?.stateID == state || buffer.contains { $0.fromState == state } } ?? true
            pendingSyncs.add((subscriber, reply), state: state, reached: reached)
        case let .resync(subscribers, reason):
            for subscriber in subscribers where subscriptions.contains(subscriber.key) {
                await reset(subscriber, reason: reason)
            }
        }
    }

    /// Keeps `input` for the first result when there is none yet; `false` when there is one.
    private func deferredUntilFirstResult(_ input: Hub.Input) -> Bool {
        guard case var .awaitingFirstResult(deferred) = phase else { return false }
        // Let go of the phase's copy first, so the append does not copy the array (thousands of
        // subscribers can come before the first result).
        phase = .awaitingFirstResult(deferred: [])
        deferred.append(input)
        phase = .awaitingFirstResult(deferred: deferred)
        return true
    }

    /// Forgets the inputs of `subscriber` waiting for the first result.
    func dropDeferred(of subscriber: Subscriber) {
        guard case var .awaitingFirstResult(deferred) = phase else { return }
        phase = .awaitingFirstResult(deferred: [])
        deferred.removeAll { $0.subscriber === subscriber }
        phase = .awaitingFirstResult(deferred: deferred)
    }

    /// Answers the `sync`s whose state was reached: the subscriber was sent its result (or a later
    /// one) — `synced` follows those messages on its connection. A `sync` of a subscriber that
    /// left goes; one of a resume waiting for this server waits with it.
    private func answerSyncs() {
        guard let result else { return }
        let due = pendingSyncs.due(at: result.stateID) { pending, reached in
            guard subscriptions.contains(pending.subscriber.key) else { return pendingResumes.contains(pending.subscriber.key) ? .wait : .drop }
            // Frames dropped for a slow client: the commits reach it with its reset, which the
            // answer waits for (a `synced` would be dropped, a `mutated` come before them).
            guard !reached || !pending.subscriber.outbox.isAwaitingReset(pending.subscriber.sub) else { return .wait }
            return .answer
        }
        for pending in due {
            switch pending.reply {
            case let .synced(id): pending.subscriber.send(body: ServerMessage.synced(WireSynced(sub: 0, id: id, version: version)).encodedBody(), version: version)
            case let .notice(notice): notice.answer(version)
            }
        }
    }

    /// The subscribers left when the live query stops get `queryClosed`; what it kept for
    /// resume goes.
    func finish() {
        let delta = kept.removeAll()
        gauge.add(changesets: delta.changesets, bytes: delta.bytes)
        for subscription in subscriptions.removeAll() {
            subscription.subscriber.end(.queryClosed, "the live query stopped")
        }
    }

    private func handle(_ event: ServedLiveQueryEvent) async {
        switch event {
        case let .initial(initial, position):
            let deferred: [Hub.Input] = if case let .awaitingFirstResult(waiting) = phase { waiting } else { [] }
            phase = .following(initial)
            clock.started(at: position)
            for input in deferred { await handle(input) }
        case let .unchanged(position):
            await announce(WireVersion(epoch: versions.epoch, sequence: position), observedAt: Int64(Date().timeIntervalSince1970 * 1_000_000))
        case let .update(update, position):
            guard case let .following(old) = phase else { return }
            let fromVersion = version
            phase = .following(update.result)
            if let passed = old.stateID { pendingSyncs.passed(passed) }
            let latency = update.latency.components
            let from = clock.advanced(to: position, observedAt: Int64(Date().timeIntervalSince1970 * 1_000_000) - latency.seconds * 1_000_000
                                          - latency.attoseconds / 1_000_000_000_000)
            keep(Buffered(from: from, fromState: old.stateID, old: old.shape, changes: update.changeset.changes,
                          bytes: 96 + old.shape.bytesNotShared(with: update.result.shape) + Self.bytes(of: update.changeset.changes)))
            await publish(update.changeset.changes, old: old.shape, from: fromVersion)
        case let .failure(error):
            logger.warning("live query failed", metadata: ["error": "\(error)"])
            if error.isTerminal {
                for subscription in subscriptions.removeAll() { subscription.subscriber.end(.queryClosed, "\(error)") }
                onTerminal()
            } else {
                for subscription in subscriptions.all { subscription.subscriber.send(.queryFailed, "\(error)") }
            }
        }
    }

    /// Keeps `entry` for resuming clients, dropping the oldest entries past
    /// `resumeBufferSize` changesets or `resumeBufferBytes` bytes (a single entry larger than
    /// the byte limit is not kept: a client behind it gets a reset).
    private func keep(_ entry: Buffered) {
        let delta = kept.keep(entry)
        gauge.add(changesets: delta.changesets, bytes: delta.bytes)
    }

    /// The bytes a changeset's positions take.
    static func bytes(of changes: ListChanges) -> Int {
        64 + changes.count * 2 * MemoryLayout<ItemPath>.stride
    }

    /// Sends one commit's changeset to every subscriber: one message per distinct window.
    private func publish(_ changes: ListChanges, old: LiveResultShape, from: WireVersion) async {
        guard let result, !subscriptions.isEmpty else { return }
        if changes.count > configuration.resetThreshold {
            for subscription in subscriptions.all { await reset(subscription.subscriber, reason: .tooFarBehind) }
            return
        }
        let transition = Transition(changes: changes, old: old, new: result)
        let groups = subscriptions.groups
        var missing: [Range<Int>: [Int]] = [:]
        for window in groups.keys {
            missing[window] = Array(Set(transition.missing(window: window, held: window)).union(unresolvedPositions(in: window)))
        }
        let (rows, failed) = await readRows(at: Set(missing.values.joined()), in: result)
        if failed { retry(subscriptions.all.map(\.subscriber)) }
        send(to: groups, version: version) { window in
            ServerMessage.changes(transition.message(from: from, to: version, rows: (missing[window] ?? []).compactMap { rows[$0] },
                                                     observedAt: observedAt)).encodedBody()
        }
    }

    /// Sends every subscriber in `groups` the body made for its window: one body per distinct
    /// window, one frame per subscription number (clients mostly use the same), shared by the
    /// subscribers that use it.
    private func send(to groups: [Range<Int>: [Int: [ObjectIdentifier: Subscriber]]], version: WireVersion,
                      body: (Range<Int>) -> String) {
        var messages: [(WireMessage, Dictionary<ObjectIdentifier, Subscriber>.Values)] = []
        for (window, bySub) in groups {
            let body = body(window)
            for (sub, subscribers) in bySub { messages.append((WireMessage(string: ServerMessage.frame(sub: sub, body: body)), subscribers.values)) }
        }
        writers.holding {
            for (message, subscribers) in messages {
                for subscriber in subscribers { subscriber.send(message, version: version) }
            }
        }
    }

    /// The rows at `positions` of `result` (see `PayloadCache`), noting which went without values.
    func readRows(at positions: Set<Int>, in result: LiveResult<SQLValue>) async -> (rows: [Int: WireRow], failed: Bool) {
        let (rows, failed) = await payloads.rows(at: positions, in: result)
        if !failed {
            for (position, row) in rows {
                guard let id = result.row(at: position)?.id else { continue }
                if row.values == nil { unresolved.insert(id) } else { unresolved.remove(id) }
            }
        }
        return (rows, failed)
    }

    /// The positions of the unresolved rows in `window` (forgetting those no longer in the result).
    func unresolvedPositions(in window: Range<Int>) -> [Int] {
        guard let result, !unresolved.isEmpty else { return [] }
        var positions: [Int] = []
        for id in unresolved {
            guard let position = result.position(of: id) else {
                unresolved.remove(id)
                continue
            }
            if window.contains(position) { positions.append(position) }
        }
        return positions
    }

    /// Tells every subscriber that the current result also stands at `later` (positioned
    /// versions): a `changes` without changes, so a client knows it is caught up with a commit
    /// that left its list as it was. Nothing when `later` is not after the version they hold.
    func announce(_ later: WireVersion, observedAt: Int64?) async {
        guard let result, let held = clock.announce(later, observedAt: observedAt), !subscriptions.isEmpty else { return }
        let groups = subscriptions.groups
        var missing: [Range<Int>: [Int]] = [:]
        for window in groups.keys { missing[window] = unresolvedPositions(in: window) }
        let (rows, _) = await readRows(at: Set(missing.values.joined()), in: result)
        send(to: groups, version: later) { window in
            ServerMessage.changes(WireChanges(sub: 0, from: held, to: later, changes: ListChanges(), insertedSectionKeys: [], insertedIDs: [],
                                              movedIDs: [], reloadedIDs: [], rows: (missing[window] ?? []).compactMap { rows[$0] },
                                              observedAt: observedAt)).encodedBody()
        }
    }

    /// How a resuming client's list becomes the current one.
    enum Resumption {
        /// The client's version is the current result's: nothing changed.
        case current
        /// The changesets from `buffer[index]` on, composed.
        case buffered(index: Int)
        /// The client is ahead of this server (another one showed it a later version): ask again
        /// once this one has caught up.
        case ahead
        case unavailable
    }
}
