import Foundation
import LiveListWire

/// Sends a client's mutations to a `livelist serve` server, each applied exactly once: it
/// numbers them under the client's name, keeps every one not yet answered, and after a lost
/// connection reconnects (with backoff) and sends them again, in order — to the same server or
/// another over the same PostgreSQL database, which answers a mutation it applied already with
/// its first outcome.
///
/// Keep `client`, ``nextID`` and ``pendingMutations`` across launches (give them back to
/// ``init(url:client:nextID:pending:transport:)``) to keep the promise across them: a mutation
/// pending when the app quit is sent again, under its number, and applied once. A new client name
/// starts again from 1. Numbers are never skipped: a mutation stays pending until the server
/// answers it, even when its caller has stopped waiting.
///
/// ```swift
/// import LiveListClient
/// import LiveListWire
///
/// @MainActor
/// func archive(_ id: Int64, list: RemoteLiveQuery, mutator: RemoteMutator) async throws {
///     // On return the server applied it, and `list` shows its commit.
///     _ = try await mutator.mutate("archive", arguments: ["id": .integer(id)], showingIn: [list])
/// }
/// ```
@MainActor
public final class RemoteMutator {
    /// The server.
    public var url: String { session.url }
    /// The connection it sends on, shared with the lists and mutators made on the same session.
    public let session: RemoteSession
    /// The client's name, as mutations carry it.
    public var client: String { pending.client }
    /// The number the next mutation gets.
    public var nextID: Int64 { pending.nextID }
    /// Mutations sent and not answered yet.
    public var pendingCount: Int { pending.entries.count }
    /// The mutations not answered yet, in number order: what to keep for the next launch.
    public var pendingMutations: [WireMutation] { pending.toResend }
    /// Called on the main actor whenever ``nextID`` or ``pendingMutations`` change: after a
    /// mutation is numbered and before it is sent, and after each answer. Keep them there
    /// (synchronously, or a crash after the send loses the number: the next launch would number
    /// a new mutation as one the server has applied, and be answered with the old one's outcome).
    /// When it throws before a send, the mutation is not sent: ``mutate(_:arguments:showingIn:expecting:)``
    /// takes its number back and throws `RemoteMutatorError.notKept`. After an answer, its error
    /// is ``lastKeepError``.
    public var onPendingChange: (() throws -> Void)?
    /// The last error ``onPendingChange`` threw after an answer (`nil` once it succeeds again).
    public private(set) var lastKeepError: (any Error)?
    /// The most mutations that may wait for an answer (the server answers for a client's latest
    /// 1,000 numbers); past it, ``mutate(_:arguments:showingIn:expecting:)`` throws.
    public static let maximumPending = 1_000
    /// Whether a mutation shows, on the lists the app gives it no effect for, the effect the
    /// server states for it (a reset's `effects`): on by default. See
    /// ``mutate(_:arguments:showingIn:expecting:)``.
    public var derivesPendingEffects = true

    private var pending: PendingMutations<CheckedContinuation<WireMutated, any Error>>
    /// Started or stopped, and a resend after busy answers waiting or not.
    private var phase = MutatorPhase()
    /// The session's connection, once this mutator sent what waited on it.
    private var connection: RemoteConnection? { phase.isStarted ? session.connection : nil }
    /// The wait before a resend, while ``phase`` says one waits.
    private var resendDelay: Task<Void, Never>?
    /// The expected effects shown for each pending mutation, by number.
    private var shownEffects: [Int64: [(list: RemoteLiveQuery, changes: [PendingChange], id: PendingChangesID)]] = [:]

    /// A mutator for client `client` (1 to 128 bytes of UTF-8, kept across launches) whose next
    /// mutation is numbered `nextID`, with the mutations `pending` from a previous launch (sent
    /// when it starts).
    public convenience init(url: String, client: String, nextID: Int64 = 1, pending: [WireMutation] = [],
                            transport: any RemoteTransport = WebSocketTransport()) {
        self.init(session: RemoteSession(url: url, transport: transport), client: client, nextID: nextID, pending: pending)
    }

    /// A mutator for client `client` that sends on `session`'s connection, beside the lists made
    /// on it: a mutation's answer then says those lists hold its commit, and
    /// ``mutate(_:arguments:showingIn:expecting:)`` waits for nothing more. At most one mutator
    /// per client name on a session.
    public init(session: RemoteSession, client: String, nextID: Int64 = 1, pending: [WireMutation] = []) {
        self.session = session
        self.pending = PendingMutations(client: client, nextID: nextID, restoring: pending)
    }

    /// Runs published mutation `name` with `arguments` on the server, once, and returns its
    /// `mutated` — after the lists in `showingIn` hold its commit (each catches up with `sync`;
    /// a list that cannot, its connection down, is not waited for).
    ///
    /// `expecting` is what the app expects the mutation to do to lists it shows: each list shows
    /// it at once, before the call suspends, marked pending (``RemoteRow/isPending``), and
    /// withdraws it once the list holds the commit — by then the server's rows stand in its
    /// place, so the pending row becomes the server's as the same row (moved or reloaded, never
    /// deleted and inserted). When the mutation is refused the lists take the change back in one
    /// changeset; after ``stop()`` it stays shown, as the mutation stays pending (``effects(ofMutation:)``).
    ///
    /// The lists `expecting` does not name — the session's and those of `showingIn` — show the
    /// effect the server states for the mutation (``RemoteListModel/effects``, with
    /// ``derivesPendingEffects``): what its statements do to the rows each list holds, shown
    /// whole or not at all, so that the commit lands in place.
    ///
    /// ```swift
    /// import LiveListClient
    /// import LiveListWire
    ///
    /// @MainActor
    /// func markRead(_ id: Int64, in inbox: RemoteLiveQuery, mutator: RemoteMutator) async throws {
    ///     _ = try await mutator.mutate("setUnread", arguments: ["id": .integer(id), "unread": .integer(0)],
    ///                                  expecting: [PendingEffect(inbox, [.update(id: .integer(id), values: ["unread": .integer(0)])])])
    /// }
    /// ```
    ///
    /// Throws
    /// `RemoteListError.server` with the server's error (`conflict`, `mutationFailed`,
    /// `badArguments`…) when it was refused, `RemoteMutatorError.tooManyPending` when
    /// ``maximumPending`` wait already, and `CancellationError` when ``stop()`` came first (the
    /// mutation stays pending, and is sent when the mutator starts again: do not send it again).
    /// A lost connection is not an error: the mutation is sent again once it is back.
    public func mutate(_ name: String, arguments: [String: WireValue] = [:], showingIn lists: [RemoteLiveQuery] = [],
                       expecting effects: [PendingEffect] = []) async throws -> WireMutated {
        guard pending.entries.count < Self.maximumPending else { throw RemoteMutatorError.tooManyPending(Self.maximumPending) }
        var number: Int64?
        let mutated: WireMutated
        do {
            mutated = try await withCheckedThrowingContinuation { continuation in
                let mutation = pending.add(name: name, arguments: arguments, waiter: continuation)
                number = mutation.id
                show(effects, forMutation: mutation.id)
                if derivesPendingEffects { showDerived(name, arguments: arguments, in: lists, besides: effects, forMutation: mutation.id) }
                do {
                    try onPendingChange?()
                } catch {
                    // Not kept where the app keeps its numbers: never sent, so the number is free again.
                    withdrawEffects(ofMutation: mutation.id)
                    pending.takeBackLast()
                    continuation.resume(throwing: RemoteMutatorError.notKept("\(error)"))
                    return
                }
                if let connection {
                    connection.send(ClientMessage.mutate(mutation).encoded())
                } else {
                    start()
                }
            }
        } catch is CancellationError {
            throw CancellationError()   // Still pending: its rows stay shown as such.
        } catch {
            if let number { withdrawEffects(ofMutation: number) }
            throw error
        }
        await waitForCommit(of: mutated, in: lists + (number.flatMap { shownEffects[$0]?.map(\.list) } ?? []))
        if let number { withdrawEffects(ofMutation: number) }
        return mutated
    }

    /// Returns once each of `lists` holds the commit `mutated` answers: at once for a list on this
    /// mutator's connection (the answer came after the commit's changes), after a `sync` for
    /// another. A list that cannot catch up (its connection down) is not waited for: it shows
    /// the commit once it is back.
    private func waitForCommit(of mutated: WireMutated, in lists: [RemoteLiveQuery]) async {
        var waited = Set<ObjectIdentifier>()
        for list in lists where waited.insert(ObjectIdentifier(list)).inserted && !list.holdsCommit(of: mutated, on: session) {
            _ = try? await list.upToDate()
        }
    }

    /// The expected effects shown for pending mutation `id`.
    public func effects(ofMutation id: Int64) -> [PendingEffect] {
        shownEffects[id]?.map { PendingEffect($0.list, $0.changes) } ?? []
    }

    /// Shows `effects` for pending mutation `id` — one restored from a previous launch — until it
    /// is answered, as ``mutate(_:arguments:showingIn:expecting:)`` shows its own. Nothing happens
    /// when no mutation `id` is pending.
    public func show(_ effects: [PendingEffect], forMutation id: Int64) {
        guard !effects.isEmpty, pending.entries.contains(where: { $0.mutation.id == id }) else { return }
        for effect in effects {
            shownEffects[id, default: []].append((effect.list, effect.changes, effect.list.showPending(effect.changes)))
        }
    }

    /// Shows on the session's lists and `named` — those the app gave no effect for in `given` —
    /// what mutation `name` with `arguments` does to each, as the server states it.
    private func showDerived(_ name: String, arguments: [String: WireValue], in named: [RemoteLiveQuery], besides given: [PendingEffect],
                             forMutation id: Int64) {
        var candidates: [RemoteLiveQuery] = []
        for list in session.lists + named where !candidates.contains(where: { $0 === list }) && !given.contains(where: { $0.list === list }) {
            candidates.append(list)
        }
        let views = candidates.compactMap { list in
            list.model.effects.map { (list, DerivedEffects.List(effects: $0, columns: list.model.columns, rows: list.model.heldRows)) }
        }
        for (list, view) in views {
            let others = views.filter { $0.0 !== list }.map(\.1)
            guard case let .success(changes)? = DerivedEffects.changes(name, arguments: arguments, list: view, others: others),
                  !changes.isEmpty else { continue }
            shownEffects[id, default: []].append((list, changes, list.showDerived(changes)))
        }
    }

    /// Takes back the effects of mutation `id` from their lists.
    private func withdrawEffects(ofMutation id: Int64) {
        for (list, _, shown) in shownEffects.removeValue(forKey: id) ?? [] { list.withdrawPending(shown) }
    }

    /// A mutation answered while no call waits for it (restored, or its caller gone): its
    /// effects go once its lists hold the commit (at once when it was refused).
    private func settleEffects(of mutated: WireMutated?, id: Int64) {
        guard let shown = shownEffects[id] else { return }
        guard let mutated else { return withdrawEffects(ofMutation: id) }
        Task { [weak self] in
            await self?.waitForCommit(of: mutated, in: shown.map(\.list))
            self?.withdrawEffects(ofMutation: id)
        }
    }

    /// A mutator let go takes back the pending rows it shows: no one will send their mutations.
    isolated deinit {
        for id in Array(shownEffects.keys) { withdrawEffects(ofMutation: id) }
    }

    /// Connects (or joins the session's connection), and keeps it — the session reconnecting
    /// with backoff and the mutations waiting sent again — until ``stop()``.
    public func start() {
        guard phase.start() else { return }
        session.answers(for: client, to: self)
        session.attach(self)
    }

    /// Leaves the session (its connection closes once nothing else uses it). Every caller still
    /// waiting throws `CancellationError`; the mutations stay pending (``pendingMutations``), sent
    /// again when the mutator starts.
    public func stop() {
        phase.stop()
        session.detach(self)
        resendDelay?.cancel()
        resendDelay = nil
        for waiter in pending.releaseWaiters() { waiter.resume(throwing: CancellationError()) }
    }

    private func receive(_ message: ServerMessage) {
        let decision: PendingMutations<CheckedContinuation<WireMutated, any Error>>.Decision
        switch message {
        case let .mutated(mutated): decision = pending.receive(mutated)
        case let .error(error): decision = pending.receive(error)
        default: return
        }
        if case .finish = decision {
            do {
                try onPendingChange?()
                lastKeepError = nil
            } catch {
                lastKeepError = error
            }
        }
        switch decision {
        case let .finish(waiter, .success(mutated)):
            phase.applied()
            if let waiter { waiter.resume(returning: mutated) } else { settleEffects(of: mutated, id: mutated.id) }
        case let .finish(waiter, .failure(error)):
            if let waiter {
                waiter.resume(throwing: RemoteListError.server(error))
            } else if let id = error.mutation?.id {
                settleEffects(of: nil, id: id)
            }
        case .resendAll:
            guard let delay = phase.busy() else { return }
            resendDelay = Task { [weak self] in
                try? await Task.sleep(for: delay)
                guard let self, !Task.isCancelled, phase.resendDue() else { return }
                resendDelay = nil
                for mutation in pending.toResend { self.connection?.send(ClientMessage.mutate(mutation).encoded()) }
            }
        case .ignore: break
        }
    }
}

extension RemoteMutator: SessionMember {
    func session(connectedOn connection: RemoteConnection) {
        for mutation in pending.toResend { connection.send(ClientMessage.mutate(mutation).encoded()) }
    }

    func session(lost reason: String, attempt: Int) {
        // The mutations waiting are sent again on the next connection.
    }

    func session(received message: ServerMessage, on connection: RemoteConnection) {
        receive(message)
    }
}

/// Why ``RemoteMutator`` refused a mutation before sending it.
public enum RemoteMutatorError: Error, Hashable, Sendable, CustomStringConvertible {
    /// This many mutations wait for an answer already.
    case tooManyPending(Int)
    /// ``RemoteMutator/onPendingChange`` could not keep the mutation (the reason): it was not sent.
    case notKept(String)

    public var description: String {
        switch self {
        case let .tooManyPending(limit): "\(limit) mutations wait for the server's answer already"
        case let .notKept(reason): "the mutation could not be kept, and was not sent: \(reason)"
        }
    }
}

/// What the app expects a mutation to do to one list it shows (see
/// ``RemoteMutator/mutate(_:arguments:showingIn:expecting:)``).
@MainActor
public struct PendingEffect {
    /// The list.
    public let list: RemoteLiveQuery
    /// The changes it shows while the mutation is pending.
    public let changes: [PendingChange]

    /// `changes` to show over `list`.
    public init(_ list: RemoteLiveQuery, _ changes: [PendingChange]) {
        self.list = list
        self.changes = changes
    }
}
