import ListDiff

/// A changing list any ``ListController`` shows: a local live query, a PostgreSQL live query, a
/// list served by `livelist serve`, or an app's own store. It hands its events — a first state,
/// changesets, failures, recoveries — in order, and keeps the records behind its rows.
///
/// A conforming source updates its ``records`` before it hands an event on (the provider's list
/// is always the newest state handed on), and starts every subscription with `.initial` of the
/// state it holds (once it holds one).
@MainActor
public protocol ListSource<SectionModel, Item, Record>: AnyObject {
    /// A section of the list.
    associatedtype SectionModel: ListElement
    /// A row of the list.
    associatedtype Item: ListElement where Item.ID: Sendable
    /// What a loaded row's cell shows.
    associatedtype Record
    /// Where the records are held and loaded.
    associatedtype Records: ListRecordProvider<Item, Record>

    /// The records behind the rows.
    var records: Records { get }

    /// Hands every event from now on to `receive`, on the main actor — first `.initial` with the
    /// state the source holds — until the subscription is cancelled.
    func subscribe(_ receive: @escaping @MainActor (ListSourceEvent<SectionModel, Item>) -> Void) -> ListSourceSubscription

    /// Returns once every change committed before the call has reached the source: the identity
    /// of the state that shows them (handed to subscribers before or soon after this returns),
    /// or `nil` when the source does not name its states.
    func upToDate() async throws -> ListStateID?
}

/// A subscription to a ``ListSource``'s events; ends with ``cancel()`` or when released.
@MainActor
public final class ListSourceSubscription {
    private var onCancel: (@MainActor () -> Void)?

    /// A subscription that runs `onCancel` once, when cancelled or released.
    public init(onCancel: @escaping @MainActor () -> Void) {
        self.onCancel = onCancel
    }

    /// Whether it still delivers events.
    public var isActive: Bool { onCancel != nil }

    /// Ends the subscription: no event is delivered after it.
    public func cancel() {
        let onCancel = onCancel
        self.onCancel = nil
        onCancel?()
    }

    isolated deinit {
        cancel()
    }
}

/// The subscribers of a ``ListSource``, in the order they subscribed: what a source keeps to hand
/// each event to every one of them.
@MainActor
public final class ListSourceReceivers<SectionModel: ListElement, Item: ListElement> {
    /// An event's receiver.
    public typealias Receiver = @MainActor (ListSourceEvent<SectionModel, Item>) -> Void

    private var receivers: [(key: Int, receive: Receiver)] = []
    private var nextKey = 0

    /// No subscribers yet.
    public init() {}

    /// Adds `receive`; the subscription returned removes it.
    public func add(_ receive: @escaping Receiver) -> ListSourceSubscription {
        let key = nextKey
        nextKey += 1
        receivers.append((key, receive))
        return ListSourceSubscription { [weak self] in self?.receivers.removeAll { $0.key == key } }
    }

    /// Hands `event` to every subscriber, oldest first.
    ///
    /// - Complexity: O(subscribers).
    public func send(_ event: ListSourceEvent<SectionModel, Item>) {
        for receiver in receivers { receiver.receive(event) }
    }
}
