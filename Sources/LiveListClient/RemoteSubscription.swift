import LiveListWire

/// Where a remote query's subscription stands, as a value: its number, whether the server has
/// answered it yet, the arguments to go back to if new ones are refused — and what to do with each
/// message and error. No connection, no task: ``RemoteLiveQuery`` holds it and carries the actions
/// out.
struct RemoteSubscription {
    /// Whether the server has answered the subscription yet.
    enum Phase: Equatable {
        /// Sent, not answered: an error refuses it.
        case subscribing
        /// Answered (a reset or changes): an error about a later request leaves it going.
        case following
    }

    /// What to do after a server's error or a contradiction in what it sent.
    enum Recovery: Equatable {
        /// Connect again, with backoff: this server has not reached the version the list holds.
        case reconnect
        /// The subscription goes on; the failure is shown (and the looks waiting fail when the
        /// read failed). New arguments that were refused are taken back: `restoring`.
        case goOn(restoring: [String: WireValue]?, failsSyncs: Bool)
        /// The subscription is refused: stop, showing the error with a retry.
        case refused(WireError)
        /// Subscribe again on the same connection (unsubscribing this one): from the version held
        /// after a gap, from nothing after a contradiction (`startOver`).
        case resubscribe(startOver: Bool)
    }

    /// The subscription's number on its connection (each subscribe takes a new one).
    private(set) var sub = 0
    private(set) var phase = Phase.subscribing
    /// The arguments the server accepted last, while newer ones wait for its answer.
    private(set) var acceptedArguments: [String: WireValue]?

    /// A subscription is sent under number `sub` (new on its connection), not answered yet.
    mutating func subscribe(as sub: Int) {
        self.sub = sub
        phase = .subscribing
        acceptedArguments = nil
    }

    /// New arguments are asked for, replacing `current` (kept to go back to until the server
    /// answers).
    mutating func argumentsChanged(from current: [String: WireValue]) {
        acceptedArguments = acceptedArguments ?? current
    }

    /// A message of this subscription was applied; `true` when the looks waiting must be asked for
    /// again (a reset after dropped frames may have taken a `synced` with them).
    mutating func applied(_ message: ServerMessage) -> Bool {
        switch message {
        case .reset:
            phase = .following
            acceptedArguments = nil
            return true
        case let .changes(changes):
            phase = .following
            // Changes from one live query to another answer new arguments.
            if changes.from.epoch != changes.to.epoch { acceptedArguments = nil }
            return false
        default:
            return false
        }
    }

    /// What to do about `error`.
    func recovery(from error: RemoteListError) -> Recovery {
        switch error {
        case let .server(wireError) where wireError.code == .behind:
            return .reconnect
        case let .server(wireError) where wireError.code == .queryFailed || (phase == .following && wireError.code != .queryClosed):
            // A failed read, or a request of this client refused (new arguments that do not fit
            // keep the old ones).
            return .goOn(restoring: wireError.code == .badArguments ? acceptedArguments : nil, failsSyncs: wireError.code == .queryFailed)
        case let .server(wireError):
            return .refused(wireError)
        case .inconsistent:
            return .resubscribe(startOver: true)
        case .versionGap, .connection, .malformed:
            return .resubscribe(startOver: false)
        }
    }
}
