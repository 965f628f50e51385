import Foundation
import LiveListWire

/// One connection to a `livelist serve` server, shared by the app's remote lists and its
/// mutator, as the protocol means it: every subscription and every mutation on one WebSocket,
/// one reconnect loop with backoff, one place that decodes the server's frames and hands each
/// to the list or mutator it is for.
///
/// Sharing it is what lets a mutation's `mutated` answer speak for the lists: the server sends
/// it after the changes of its commit to every subscription of the connection, so
/// ``RemoteMutator/mutate(_:arguments:showingIn:expecting:)`` returns with those lists holding
/// the commit without asking each to look for it (`sync`). Lists and mutators made with a URL
/// instead each open a session of their own.
///
/// ```swift
/// import LiveListClient
/// import LiveListWire
///
/// @MainActor
/// func inboxAndOutbox(url: String) -> (RemoteLiveQuery, RemoteLiveQuery, RemoteMutator) {
///     let session = RemoteSession(url: url)
///     let inbox = RemoteLiveQuery(session: session, query: "inbox", arguments: ["folder": .text("inbox")])
///     let sent = RemoteLiveQuery(session: session, query: "inbox", arguments: ["folder": .text("sent")])
///     let mutator = RemoteMutator(session: session, client: "device-1")
///     inbox.start()
///     sent.start()
///     mutator.start()
///     return (inbox, sent, mutator)
/// }
/// ```
///
/// The session connects when the first list or mutator starts and closes once the last one
/// stops; each goes on through lost connections (a list resumes from its version, a mutator
/// sends its pending mutations again, in order).
@MainActor
public final class RemoteSession {
    /// Where the connection stands.
    public enum State: Sendable, Equatable {
        /// No list or mutator has started: nothing is connected.
        case idle
        /// The first connection is being opened.
        case connecting
        /// Connected: frames flow.
        case connected
        /// The connection failed or ended; the next attempt is under way or waiting.
        case reconnecting(attempt: Int, reason: String)
    }

    /// The server's WebSocket endpoint (`ws://HOST:PORT/live`).
    public let url: String
    /// Where the connection stands now.
    public var state: State {
        switch phase {
        case .idle: .idle
        case let .running(_, connection, attempt, reason):
            if connection != nil { .connected } else if attempt == 0 { .connecting } else { .reconnecting(attempt: attempt, reason: reason) }
        }
    }
    /// Connections opened so far (the first and every reconnection).
    public private(set) var connectionsOpened = 0

    /// The loop, and what it holds: the connection while one is open, the failures in a row and
    /// the last one's reason.
    private enum Phase {
        case idle
        case running(task: Task<Void, Never>, connection: RemoteConnection?, attempt: Int, reason: String)
    }

    private let transport: any RemoteTransport
    private var phase = Phase.idle
    /// The lists and mutators that want the connection, in the order they started.
    private var members: [(id: ObjectIdentifier, member: WeakMember)] = []
    /// Which member each subscription number belongs to.
    private var subscriptions: [Int: ObjectIdentifier] = [:]
    /// Which member each client name's mutation answers go to.
    private var mutators: [String: ObjectIdentifier] = [:]
    private var lastSub = 0

    /// A session with the server at `url`; it connects when a list or mutator on it starts.
    public init(url: String, transport: any RemoteTransport = WebSocketTransport()) {
        self.url = url
        self.transport = transport
    }

    /// The open connection, if any.
    var connection: RemoteConnection? {
        if case let .running(_, connection, _, _) = phase { connection } else { nil }
    }

    /// `member` wants the connection: connects if nothing was, else tells it of the open one.
    func attach(_ member: some SessionMember) {
        let id = ObjectIdentifier(member)
        guard !members.contains(where: { $0.id == id }) else { return }
        members.append((id, WeakMember(member)))
        switch phase {
        case .idle:
            phase = .running(task: Task { [weak self] in await self?.run() }, connection: nil, attempt: 0, reason: "")
        case let .running(_, connection?, _, _):
            member.session(connectedOn: connection)
        case .running:
            break
        }
    }

    /// `member` no longer wants the connection (its subscriptions' numbers and client name
    /// leave with it); the last one to go closes it.
    func detach(_ member: some SessionMember) {
        let id = ObjectIdentifier(member)
        members.removeAll { $0.id == id || $0.member.value == nil }
        subscriptions = subscriptions.filter { $0.value != id }
        mutators = mutators.filter { $0.value != id }
        guard members.isEmpty, case let .running(task, connection, _, _) = phase else { return }
        task.cancel()
        connection?.close()
        phase = .idle
    }

    /// A new subscription number on this session, whose messages go to `member`.
    func subscriptionNumber(for member: some SessionMember) -> Int {
        lastSub += 1
        subscriptions[lastSub] = ObjectIdentifier(member)
        return lastSub
    }

    /// The answers to `client`'s mutations go to `member`.
    func answers(for client: String, to member: some SessionMember) {
        mutators[client] = ObjectIdentifier(member)
    }

    /// Ends the connection: every member hears it lost, and the session connects again (behind a
    /// load balancer, perhaps to another server).
    func reconnect() {
        connection?.close()
    }

    private func run() async {
        while !Task.isCancelled {
            let reason: String
            do {
                let connection = try await transport.connect(to: url)
                guard !Task.isCancelled, case let .running(task, _, attempt, lastReason) = phase else {
                    connection.close()
                    return
                }
                connectionsOpened += 1
                phase = .running(task: task, connection: connection, attempt: attempt, reason: lastReason)
                for member in liveMembers() { member.session(connectedOn: connection) }
                for try await frame in connection.frames {
                    // Frames flow again: the failures in a row are over.
                    if case let .running(task, _, attempt, _) = phase, attempt > 0 {
                        phase = .running(task: task, connection: connection, attempt: 0, reason: "")
                    }
                    receive(frame, on: connection)
                }
                reason = "the server closed the connection"
            } catch {
                reason = "\(error)"
            }
            guard !Task.isCancelled, case let .running(task, _, attempt, _) = phase else { return }
            phase = .running(task: task, connection: nil, attempt: attempt + 1, reason: reason)
            for member in liveMembers() { member.session(lost: reason, attempt: attempt + 1) }
            await Reconnect.pause(attempt: attempt + 1)
        }
    }

    /// Decodes one frame and hands it to the member it is for; a frame that is not the protocol
    /// ends the connection (every member resumes on the next).
    private func receive(_ frame: String, on connection: RemoteConnection) {
        let message: ServerMessage
        do {
            message = try ServerMessage.decode(Array(frame.utf8))
        } catch {
            connection.close()
            return
        }
        let owner: ObjectIdentifier? = switch message {
        case let .mutated(mutated): mutators[mutated.client]
        case let .error(error) where error.mutation != nil: error.mutation.flatMap { mutators[$0.client] }
        default: message.sub.flatMap { subscriptions[$0] }
        }
        // A message for a subscription given up, or a client no mutator here has: dropped.
        guard let owner, let member = members.first(where: { $0.id == owner })?.member.value else { return }
        member.session(received: message, on: connection)
    }

    /// The lists made on this session and started.
    var lists: [RemoteLiveQuery] { liveMembers().compactMap { $0 as? RemoteLiveQuery } }

    private func liveMembers() -> [any SessionMember] {
        members.compactMap { $0.member.value }
    }

    private struct WeakMember {
        weak var value: (any SessionMember)?
        init(_ value: any SessionMember) { self.value = value }
    }
}

/// A list or mutator on a ``RemoteSession``: told when a connection opens, when it is lost, and
/// of every message for it, in the order the server sent them.
@MainActor
protocol SessionMember: AnyObject {
    /// A connection is open: subscribe, send what waits.
    func session(connectedOn connection: RemoteConnection)
    /// The connection was lost (`attempt` failures in a row): the session is connecting again.
    func session(lost reason: String, attempt: Int)
    /// A message for this member.
    func session(received message: ServerMessage, on connection: RemoteConnection)
}
