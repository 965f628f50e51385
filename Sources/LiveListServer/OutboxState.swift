import LiveListWire
import NIOCore

/// The decisions of one connection's outbox (``Outbox``), as a value: events in — a frame sent,
/// the switch to direct writes, the channel writer taking or parking, a close asked for, the
/// writer task asking what to do, the socket gone — and what to wake out. No lock, no
/// continuation, no I/O: `Outbox` holds this under its lock and carries out the wakes.
///
/// The limit: a client that reads too slowly and lets the queue pass `byteLimit` loses its
/// subscriptions' queued frames, and every later frame of those subscriptions until their reset
/// is queued — so a client never receives a changeset that does not start where its last one
/// ended. A reset does not count against the limit (a window's rows may outweigh it, and a reset
/// dropped for its own size would be asked for again at once, forever, while the client stalls);
/// the changes queued after it do, and when they overflow, the reset goes with them.
struct OutboxState {
    /// A frame and what it is for.
    struct Frame {
        /// The message: one value shared by every subscriber it goes to.
        var message: WireMessage
        /// The subscription, `nil` for a connection-wide message.
        var sub: Int?
        /// Whether the frame starts the subscription's list over (a reset).
        var isReset: Bool
        /// The version the subscription's list holds once the client took the frame (`nil`: a
        /// frame that names none, an error).
        var version: WireVersion? = nil
    }

    /// Who takes the frames to the socket.
    enum Route: Equatable {
        /// The connection's writer task, through hummingbird-websocket's outbound writer.
        case writerTask
        /// The connection's channel writer, on the channel's event loop; `wakePending`: it was
        /// woken and has not taken the frames yet (so it is not woken again).
        case channelWriter(wakePending: Bool)
    }

    /// Where the connection is in its life.
    enum Phase: Equatable {
        case open
        /// A close was asked for: it goes after the frames already queued; nothing more is queued.
        case closing(code: UInt16, reason: String)
        /// The close was handed to the writer task, or the socket is gone.
        case closed
    }

    /// What to wake, outside the lock.
    enum Wake: Equatable {
        case none
        /// The writer task, if it waits.
        case writerTask
        /// The channel writer (it was not woken since it last took the frames).
        case channelWriter
    }

    /// What the writer task does next.
    enum Next: Equatable {
        case write([ByteBuffer])
        case close(code: UInt16, reason: String)
        case finished
    }

    let byteLimit: Int
    private(set) var frames: [Frame] = []
    /// The bytes of the queued frames that are not resets.
    private(set) var queuedBytes = 0
    /// Subscriptions whose frames are dropped until their reset.
    private(set) var awaitingReset: Set<Int> = []
    private(set) var route = Route.writerTask
    private(set) var phase = Phase.open
    /// Per subscription, the version of the last frame queued that names one: what its list
    /// holds once the client took every frame queued so far (or, when they were dropped, what
    /// its reset will hold at least).
    private(set) var queuedVersions: [Int: WireVersion] = [:]

    init(byteLimit: Int) {
        self.byteLimit = byteLimit
    }

    /// A frame to queue: what to wake, and the subscriptions whose frames it made overflow (their
    /// frames are dropped until their reset).
    /// - Complexity: O(1), or O(q) for q queued frames when they overflow.
    mutating func send(_ frame: Frame) -> (wake: Wake, dropped: [Int]) {
        guard phase == .open else { return (.none, []) }
        if let sub = frame.sub, !awaitingReset.isEmpty, awaitingReset.contains(sub) {
            guard frame.isReset else { return (.none, []) }
            awaitingReset.remove(sub)
        }
        frames.append(frame)
        if let sub = frame.sub, let version = frame.version { queuedVersions[sub] = version }
        if !frame.isReset { queuedBytes += frame.message.text.readableBytes }
        var dropped: [Int] = []
        if queuedBytes > byteLimit {
            let overflowed = Set(frames.compactMap(\.sub))
            frames.removeAll { $0.sub != nil }
            queuedBytes = frames.reduce(0) { $0 + ($1.isReset ? 0 : $1.message.text.readableBytes) }
            awaitingReset.formUnion(overflowed)
            dropped = overflowed.sorted()
        }
        switch route {
        case .writerTask: return (.writerTask, dropped)
        case .channelWriter: return (claimChannelWriter(), dropped)
        }
    }

    /// The versions a connection-wide frame queued now can name for `noticed` subscriptions
    /// (each with a version its list was sent earlier — a `mutated` waits for those): the later
    /// of that and the version of the subscription's last frame queued, so that a frame queued
    /// after a later commit's `changes` never names an older version than they lead to. A
    /// version of another epoch (the subscription moved to new arguments) is the last queued.
    func versions(holding noticed: [Int: WireVersion]) -> [Int: WireVersion] {
        noticed.reduce(into: [:]) { versions, entry in
            let (sub, noticed) = entry
            guard let queued = queuedVersions[sub] else {
                versions[sub] = noticed
                return
            }
            versions[sub] = queued.epoch != noticed.epoch || queued.sequence > noticed.sequence ? queued : noticed
        }
    }

    /// The channel writer, when it is to be woken now (frames queued, not woken yet), noted as
    /// woken.
    private mutating func claimChannelWriter() -> Wake {
        guard case .channelWriter(wakePending: false) = route, !frames.isEmpty else { return .none }
        route = .channelWriter(wakePending: true)
        return .channelWriter
    }

    /// Frames leave through the channel writer from now on; it is woken at once when frames are
    /// queued already.
    mutating func useChannelWriter() -> Wake {
        route = .channelWriter(wakePending: false)
        return claimChannelWriter()
    }

    /// The channel writer takes every queued frame; the next frame wakes it again.
    mutating func takeForChannelWriter() -> [Frame] {
        if case .channelWriter = route { route = .channelWriter(wakePending: false) }
        var taken: [Frame] = []
        swap(&taken, &frames)
        queuedBytes = 0
        return taken
    }

    /// The channel cannot take more now: the frames stay (and count against the limit); the next
    /// frame or close wakes the channel writer again.
    mutating func parkChannelWriter() {
        if case .channelWriter = route { route = .channelWriter(wakePending: false) }
    }

    /// The frames the channel writer took were written: a close asked for may go now.
    func channelWriterWrote() -> Wake {
        if case .closing = phase, frames.isEmpty { return .writerTask }
        return .none
    }

    /// A close after the frames already queued (the first close asked for is the one sent).
    mutating func close(code: UInt16, reason: String) -> Wake {
        if phase == .open { phase = .closing(code: code, reason: reason) }
        if case .channelWriter = route, !frames.isEmpty {
            // The close waits for the channel writer to take the frames.
            return claimChannelWriter()
        }
        return .writerTask
    }

    /// Whether the writer task has something to do: the end; frames to write; a close, which
    /// with the channel writer waits until it has taken every frame.
    var writerTaskMayGo: Bool {
        switch (phase, route) {
        case (.closed, _): true
        case (.closing, .channelWriter): frames.isEmpty
        case (.open, .channelWriter): false
        case (.closing, .writerTask): true
        case (.open, .writerTask): !frames.isEmpty
        }
    }

    /// What the writer task does now, taking it; `nil`: wait.
    mutating func nextForWriterTask() -> Next? {
        guard writerTaskMayGo else { return nil }
        if phase == .closed { return .finished }
        if !frames.isEmpty {
            let texts = frames.map(\.message.text)
            frames.removeAll(keepingCapacity: true)
            queuedBytes = 0
            return .write(texts)
        }
        guard case let .closing(code, reason) = phase else { return nil }
        phase = .closed
        return .close(code: code, reason: reason)
    }

    /// The socket is gone: nothing more is queued, and the writer task ends.
    mutating func finish() {
        phase = .closed
        frames.removeAll()
        queuedVersions.removeAll()
        queuedBytes = 0
        route = .writerTask
    }
}
