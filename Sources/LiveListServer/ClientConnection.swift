import Foundation
import ListDiff
import LiveListWire
import LiveQueryCore
import Logging
import NIOCore

/// One client's connection: its subscriptions, the checks of every request against the
/// server's limits, and the routing of requests to the shared live queries. Requests are handled
/// in the order they arrive; a bad request gets a typed error and changes nothing.
///
/// `subscriptions` is a `Locked` value: the read loop changes it, a hub's overflow callback
/// reads it.
final class ClientConnection: Sendable {
    let server: LiveListServer
    let claims: LiveListClaims?
    let logger: Logger
    let outbox: Outbox
    private let subscriptions = Locked<[Int: (hub: Hub, subscriber: Subscriber)]>([:])

    init(server: LiveListServer, claims: LiveListClaims?, logger: Logger) {
        self.server = server
        self.claims = claims
        self.logger = logger
        outbox = Outbox(byteLimit: server.configuration.outboundByteLimit)
        outbox.setOverflowHandler { [weak self] subs in self?.overflowed(subs) }
    }

    /// Handles one frame's text. Returns the close to send when the frame breaks the protocol.
    func receive(_ bytes: [UInt8]) async -> (WireCloseCode, String)? {
        let message: ClientMessage
        // A request with a value not in the protocol's form is refused alone (`badArguments`),
        // where its arguments would be checked: the connection goes on.
        let badArguments: String?
        do {
            message = try ClientMessage.decode(bytes)
            badArguments = nil
        } catch let .badArguments(request, reason) {
            message = request
            badArguments = reason
        } catch {
            return (.protocolError, error.description)
        }
        switch message {
        case let .subscribe(subscription): await subscribe(subscription, badArguments: badArguments)
        case let .window(sub, window):
            guard let entry = subscriptions.withLock({ $0[sub] }) else {
                fail(sub, .unknownSubscription, "no subscription \(sub)")
                return nil
            }
            guard let range = checkedWindow(window, sub: sub) else { return nil }
            entry.hub.send(.window(entry.subscriber, range))
        case let .arguments(sub, arguments): await change(sub, to: arguments, badArguments: badArguments)
        case let .sync(sub, id):
            guard let entry = subscriptions.withLock({ $0[sub] }) else {
                fail(sub, .unknownSubscription, "no subscription \(sub)")
                return nil
            }
            // In line: the requests after it wait for the look (a few milliseconds), so `synced`
            // is sent in the order the client asked. Looks are shared by every `sync` of the query.
            do {
                let state = try await entry.hub.look.state()
                entry.hub.send(.sync(entry.subscriber, reply: .synced(id: id), state: state))
            } catch {
                fail(sub, .queryFailed, "the look for commits failed: \(error)")
            }
        case let .mutate(mutation):
            // Taken in turn with every other connection's (`MutationScheduler`).
            let arrived = ContinuousClock.now
            let queued = server.registry.mutationScheduler.enqueue(ObjectIdentifier(self), limit: server.configuration.maximumPendingMutations) {
                [self] leftEngine in
                let outcome = await perform(mutation, badArguments: badArguments, leftEngine: leftEngine)
                server.metrics.mutationAnswered(outcome, since: arrived)
            }
            if !queued {
                fail(mutation, .mutationUnavailable, "more than \(server.configuration.maximumPendingMutations) mutations wait on this connection")
                server.metrics.mutationAnswered(.unavailable, since: arrived)
            }
        case let .unsubscribe(sub):
            guard let entry = subscriptions.withLock({ $0.removeValue(forKey: sub) }) else {
                fail(sub, .unknownSubscription, "no subscription \(sub)")
                return nil
            }
            await server.registry.unsubscribe(entry.hub, entry.subscriber, idleTimeout: server.configuration.idleTimeout)
        }
        return nil
    }

    private func subscribe(_ request: WireSubscription, badArguments: String?) async {
        let sub = request.sub
        let (count, isOpen) = subscriptions.withLock { ($0.count, $0[sub] != nil) }
        guard !isOpen else {
            fail(sub, .duplicateSubscription, "subscription \(sub) is open")
            return
        }
        guard count < server.configuration.maximumSubscriptionsPerConnection else {
            fail(sub, .tooManySubscriptions, "at most \(server.configuration.maximumSubscriptionsPerConnection) subscriptions per connection")
            return
        }
        guard let query = server.queries[request.query] else {
            fail(sub, .unknownQuery, "no published query \"\(request.query)\"")
            return
        }
        let arguments: [String: WireValue]
        do throws(WireError) {
            if let badArguments { throw WireError(sub: sub, code: .badArguments, message: badArguments) }
            arguments = try query.validate(request.arguments, claims: claims?.values)
        } catch {
            fail(sub, error.code, error.message)
            return
        }
        guard let window = checkedWindow(request.window, sub: sub) else { return }
        let effects = server.mutations.isEmpty ? nil
            : ListEffects(catalog: await server.mutationEffects(), mutations: server.mutations, claims: claims?.values)
        let subscriber = Subscriber(sub: sub, outbox: outbox, effects: effects) { [weak self] ended in
            Task { await self?.ended(ended) }
        }
        let key = HubKey(name: query.name, arguments: arguments)
        do {
            let hub = try await server.registry.subscribe(key, subscriber, window: window, resume: request.resume) { [server] in
                try await server.openHub(key, query: query)
            }
            subscriptions.withLock { $0[sub] = (hub, subscriber) }
        } catch let error as WireError {
            fail(sub, error.code, error.message)
        } catch {
            fail(sub, .queryFailed, "\(error)")
        }
    }

    /// New arguments for subscription `sub`: checked like a subscription's; the subscription moves
    /// to the live query of the new arguments, which sends one changeset from the list the client
    /// holds. Bad arguments get a typed error and change nothing.
    private func change(_ sub: Int, to requested: [String: WireValue], badArguments: String?) async {
        guard let entry = subscriptions.withLock({ $0[sub] }) else {
            fail(sub, .unknownSubscription, "no subscription \(sub)")
            return
        }
        guard let query = server.queries[entry.hub.key.name] else {
            fail(sub, .unknownQuery, "no published query \"\(entry.hub.key.name)\"")
            return
        }
        let arguments: [String: WireValue]
        do throws(WireError) {
            if let badArguments { throw WireError(sub: sub, code: .badArguments, message: badArguments) }
            arguments = try query.validate(requested, claims: claims?.values)
        } catch {
            fail(sub, error.code, error.message)
            return
        }
        let key = HubKey(name: query.name, arguments: arguments)
        guard key != entry.hub.key else {
            // The same arguments: nothing changes, and the client hears so.
            entry.hub.send(.acknowledge(entry.subscriber))
            return
        }
        do {
            let hub = try await server.registry.move(entry.subscriber, from: entry.hub, to: key, window: 0..<0,
                                                     idleTimeout: server.configuration.idleTimeout) { [server] in
                try await server.openHub(key, query: query)
            }
            subscriptions.withLock { $0[sub] = (hub, entry.subscriber) }
            // Frames dropped while it moved (a slow client) are asked for again from the new hub.
            if outbox.isAwaitingReset(sub) { hub.send(.resync([entry.subscriber], .slowClient)) }
        } catch let error as WireError {
            subscriptions.withLock { _ = $0.removeValue(forKey: sub) }
            fail(sub, error.code, error.message)
        } catch {
            subscriptions.withLock { _ = $0.removeValue(forKey: sub) }
            fail(sub, .queryClosed, "the query of the new arguments could not open: \(error)")
        }
    }

    private func checkedWindow(_ window: WireWindow, sub: Int) -> Range<Int>? {
        guard let range = window.range else {
            fail(sub, .badWindow, "window \(window) is not [start >= 0, count >= 0]")
            return nil
        }
        guard range.count <= server.configuration.maximumWindow else {
            fail(sub, .windowTooLarge, "window of \(range.count) rows; at most \(server.configuration.maximumWindow)")
            return nil
        }
        return range
    }

    /// Runs a client's mutation through the engine and answers it: `mutated` once every
    /// subscription of the connection was sent the state that holds its commit, or an error
    /// naming the mutation. `leftEngine` is called once the engine is done with it. Returns how
    /// it was answered (for the metrics).
    private func perform(_ request: WireMutation, badArguments: String?, leftEngine: @Sendable () -> Void) async -> LiveListMetrics.MutationOutcome {
        // A server that publishes none writes nothing: no number is kept for any client.
        guard !server.mutations.isEmpty else {
            leftEngine()
            fail(request, .unknownMutation, "this server publishes no mutations")
            return .refused
        }
        // A request the server refuses itself is recorded under its number all the same, so the
        // client's next number follows it and a resend gets the same answer.
        let action: MutationRequest.Action
        if let mutation = server.mutations[request.name] {
            do throws(WireError) {
                if let badArguments { throw WireError(sub: nil, code: .badArguments, message: badArguments) }
                action = .run(mutation, arguments: try mutation.validate(request.arguments, claims: claims?.values))
            } catch {
                action = .refuse(MutationRefusal(code: error.code, message: error.message))
            }
        } else {
            action = .refuse(MutationRefusal(code: .unknownMutation, message: "no published mutation \"\(request.name.prefix(256))\""))
        }
        let principal: String = if case let .text(subject)? = claims?.values["sub"] { subject } else { "" }
        let outcome: MutationOutcome
        do {
            outcome = try await server.engine.perform(MutationRequest(action: action, principal: principal, client: request.client,
                                                                      id: request.id, name: request.name))
        } catch let error as WireError where [.mutationOutOfOrder, .mutationUnavailable, .unknownMutation].contains(error.code) {
            leftEngine()
            fail(request, error.code, error.message)
            return switch error.code {
            case .mutationOutOfOrder: .outOfOrder
            case .mutationUnavailable: .unavailable
            default: .refused
            }
        } catch {
            leftEngine()
            // Anything else recorded nothing either: the client sends it again.
            logger.notice("mutation could not run", metadata: ["mutation": "\(request.name)", "error": "\(error)"])
            fail(request, .mutationUnavailable, "\(error)")
            return .unavailable
        }
        switch outcome {
        case let .refused(refusal):
            leftEngine()
            fail(request, refusal.code, refusal.message)
            return .refused
        case .applied, .alreadyApplied:
            // The looks for the commit are the mutation's engine work too: made after the next
            // connection's turn began, each would wait behind that turn's write (over SQLite the
            // look runs on the writer) — a queue of others' mutations would delay this answer by
            // two mutations' time, not one.
            let states = await statesHoldingCommits()
            leftEngine()
            let noticed = await versions(holding: states)
            // Each version is taken as the frame is queued, after any later commit's `changes`
            // queued since the notice: never older than what the subscription was sent.
            outbox.send(holding: noticed) { versions in
                let mutated = WireMutated(client: request.client, id: request.id, versions: versions, duplicate: outcome == .alreadyApplied)
                return Outbox.Frame(message: WireMessage(string: ServerMessage.mutated(mutated).encoded()), sub: nil, isReset: false)
            }
            return outcome == .alreadyApplied ? .duplicate : .applied
        }
    }

    /// For every subscription of the connection, the state holding every commit made before the
    /// call (its hub looks, as for `sync`). A subscription whose look fails is left out.
    private func statesHoldingCommits() async -> [(sub: Int, entry: (hub: Hub, subscriber: Subscriber), state: ListStateID?)] {
        let entries = subscriptions.withLock { $0 }
        guard !entries.isEmpty else { return [] }
        return await withTaskGroup(of: (Int, (hub: Hub, subscriber: Subscriber), ListStateID?)?.self) { group in
            for (sub, entry) in entries {
                group.addTask { [logger] in
                    do {
                        return (sub, entry, try await entry.hub.look.state())
                    } catch {
                        logger.notice("the look for a mutation's commit failed", metadata: ["sub": "\(sub)", "error": "\(error)"])
                        return nil
                    }
                }
            }
            var states: [(sub: Int, entry: (hub: Hub, subscriber: Subscriber), state: ListStateID?)] = []
            for await state in group { if let state { states.append((state.0, state.1, state.2)) } }
            return states
        }
    }

    /// Waits until each subscription was sent a state at least `states`' (one that ends
    /// meanwhile is left out), and gives the versions they hold.
    private func versions(holding states: [(sub: Int, entry: (hub: Hub, subscriber: Subscriber), state: ListStateID?)]) async -> [Int: WireVersion] {
        await withTaskGroup(of: (Int, WireVersion?).self) { group in
            for (sub, entry, state) in states {
                group.addTask {
                    (sub, await VersionNotice.wait { entry.hub.send(.sync(entry.subscriber, reply: .notice($0), state: state)) })
                }
            }
            var versions: [Int: WireVersion] = [:]
            for await (sub, version) in group { versions[sub] = version }
            return versions
        }
    }

    private func fail(_ mutation: WireMutation, _ code: WireErrorCode, _ message: String) {
        let error = WireError(sub: nil, code: code, message: message, mutation: WireMutationID(client: mutation.client, id: mutation.id))
        outbox.send(Outbox.Frame(message: WireMessage(string: ServerMessage.error(error).encoded()), sub: nil, isReset: false))
    }

    private func fail(_ sub: Int, _ code: WireErrorCode, _ message: String) {
        let text = ServerMessage.error(WireError(sub: sub, code: code, message: message)).encoded()
        outbox.send(Outbox.Frame(message: WireMessage(string: text), sub: nil, isReset: false))
    }

    /// Frames of `subs` were dropped: each gets a reset from its hub.
    private func overflowed(_ subs: [Int]) {
        let entries = subscriptions.withLock { subscriptions in subs.compactMap { subscriptions[$0] } }
        logger.notice("slow client: frames dropped", metadata: ["subscriptions": "\(subs)"])
        for entry in entries { entry.hub.send(.resync([entry.subscriber], .slowClient)) }
    }

    /// The hub ended a subscription (the query closed, or a resume it could not serve): its
    /// number is free again.
    private func ended(_ subscriber: Subscriber) async {
        let entry = subscriptions.withLock { subscriptions -> (hub: Hub, subscriber: Subscriber)? in
            guard let entry = subscriptions[subscriber.sub], entry.subscriber === subscriber else { return nil }
            subscriptions[subscriber.sub] = nil
            return entry
        }
        guard let entry else { return }
        await server.registry.unsubscribe(entry.hub, entry.subscriber, idleTimeout: server.configuration.idleTimeout)
    }

    /// Ends every subscription and drops the mutations waiting (the socket closed).
    func closeAll() async {
        server.registry.mutationScheduler.close(ObjectIdentifier(self))
        let entries = subscriptions.withLock { subscriptions -> [(hub: Hub, subscriber: Subscriber)] in
            let entries = Array(subscriptions.values)
            subscriptions = [:]
            return entries
        }
        for entry in entries {
            await server.registry.unsubscribe(entry.hub, entry.subscriber, idleTimeout: server.configuration.idleTimeout)
        }
    }
}
