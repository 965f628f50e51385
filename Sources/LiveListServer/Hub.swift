import ListDiff
import LiveListWire
import LiveQueryCore
import Logging

/// What identifies a shared live query: the published query and its validated arguments.
struct HubKey: Hashable, Sendable, CustomStringConvertible {
    var name: String
    var arguments: [String: WireValue]

    var description: String {
        name + "(" + arguments.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + ")"
    }
}

/// The list a subscriber held when it left a live query for another (new arguments).
struct Detached: Sendable {
    var result: LiveResult<SQLValue>
    var version: WireVersion
    var window: Range<Int>
}

/// One live query shared by every subscriber of the same (query, arguments): its changesets are
/// made ready once per commit and encoded once per distinct window, whatever the number of
/// subscribers. Everything it does runs in order on one task (``HubState``), fed by the live
/// query's events and the subscribers' requests.
final class Hub: Sendable {
    enum Input: Sendable {
        case event(ServedLiveQueryEvent)
        case subscribe(Subscriber, window: Range<Int>, resume: WireResume?)
        /// A resuming subscriber whose version is ahead of this server's, asking again.
        case resubscribe(Subscriber, window: Range<Int>, resume: WireResume, attempt: Int)
        case window(Subscriber, Range<Int>)
        case unsubscribe(Subscriber)
        /// Arguments equal to the subscription's: a `changes` without changes, from and to the
        /// version the subscriber holds.
        case acknowledge(Subscriber)
        /// A client's `sync` (or a mutation's wait): the reply once the subscriber was sent the
        /// result of `state` (`nil`: the current one).
        case sync(Subscriber, reply: SyncReply, state: ListStateID?)
        /// Subscribers whose frames were dropped (slow clients): each gets a reset.
        case resync([Subscriber], WireResetReason)
        /// Stops sending to the subscriber and answers with the list it holds (`nil` before the
        /// first result): the first step of new arguments.
        case detach(Subscriber, CheckedContinuation<Detached?, Never>)
        /// Starts the subscriber from the list it holds of another live query (new arguments):
        /// one changeset from that list to this one.
        case switchIn(Subscriber, window: Range<Int>, from: Detached)

        /// The subscriber an input waiting for the first result is for.
        var subscriber: Subscriber? {
            switch self {
            case let .subscribe(subscriber, _, _), let .switchIn(subscriber, _, _), let .sync(subscriber, _, _): subscriber
            default: nil
            }
        }
    }

    let key: HubKey
    let query: any ServedLiveQuery
    /// The looks the subscribers' `sync`s share.
    let look: SharedLook
    private let continuation: AsyncStream<Input>.Continuation
    private let tasks: [Task<Void, Never>]

    /// Tells the server of the live query's failures, apply times and resumes.
    let observer: HubObserver

    init(key: HubKey, query: any ServedLiveQuery, definition: String, configuration: LiveListServer.Configuration,
         writers: LoopWriters, gauge: ResumeGauge, observer: HubObserver, logger: Logger, onTerminal: @escaping @Sendable () -> Void) {
        self.key = key
        self.query = query
        self.observer = observer
        look = SharedLook { try await query.upToDate() }
        let versions = HubVersions(query: query, key: key, definition: definition)
        let (inputs, continuation) = AsyncStream<Input>.makeStream()
        self.continuation = continuation
        let forward = Task {
            // Positioned results come with their positions; counted ones need none (and no extra hop).
            if versions.isPositioned {
                for await event in query.servedEvents {
                    observer.saw(event)
                    continuation.yield(.event(event))
                }
            } else {
                for await event in query.events {
                    let event = ServedLiveQueryEvent(event)
                    observer.saw(event)
                    continuation.yield(.event(event))
                }
            }
        }
        let loop = Task {
            let state = HubState(query: query, versions: versions, configuration: configuration, writers: writers, gauge: gauge, observer: observer,
                                 logger: logger, onTerminal: onTerminal) { input, delay in
                Task {
                    try? await Task.sleep(for: delay)
                    continuation.yield(input)
                }
            }
            for await input in inputs { await state.handle(input) }
            state.finish()
        }
        tasks = [forward, loop]
    }

    func send(_ input: Input) { continuation.yield(input) }

    /// Takes `subscriber` off this live query, with the list it holds (`nil` when there is none,
    /// or the live query is closed).
    func detach(_ subscriber: Subscriber) async -> Detached? {
        await withCheckedContinuation { (reply: CheckedContinuation<Detached?, Never>) in
            if case .terminated = continuation.yield(.detach(subscriber, reply)) { reply.resume(returning: nil) }
        }
    }

    /// Stops the live query and the loop; subscribers still attached get `reason`.
    func close() {
        continuation.finish()
        tasks[0].cancel()
        query.cancel()
        observer.closed()
    }
}
