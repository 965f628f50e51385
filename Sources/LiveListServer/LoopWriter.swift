import ListDiff
import NIOCore

/// Writes the frames of many connections on one event loop with one hop per burst: a commit's
/// changeset queued in 5,000 outboxes costs one `execute` on each loop, not a task wake-up and a
/// hop per connection.
///
/// While held (a hub sending one commit to its subscribers), it only collects: the hop comes
/// at the release, so a commit costs one hop per loop however the loop and the hub interleave.
///
/// The writers waiting, the holds and the hops are one `Locked` value; the writers are drained on
/// `eventLoop`.
final class LoopWriter: Sendable {
    private struct State {
        var pending: [ChannelWriter] = []
        var isScheduled = false
        var holds = 0
        /// Hops to the loop so far (the tests count them).
        var hopCount = 0

        /// Whether the caller should hop now.
        mutating func claimHop() -> Bool {
            guard !isScheduled, holds == 0, !pending.isEmpty else { return false }
            isScheduled = true
            hopCount += 1
            return true
        }
    }

    let eventLoop: any EventLoop
    private let state = Locked(State())

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Asks for `writer`'s frames to be written on the next turn of the loop.
    func schedule(_ writer: ChannelWriter) {
        hop(if: state.withLock { state -> Bool in
            state.pending.append(writer)
            return state.claimHop()
        })
    }

    /// Collects without hopping until ``release()``.
    func hold() {
        state.withLock { $0.holds += 1 }
    }

    func release() {
        hop(if: state.withLock { state -> Bool in
            state.holds -= 1
            return state.claimHop()
        })
    }

    var hops: Int { state.withLock { $0.hopCount } }

    private func hop(if claimed: Bool) {
        if claimed { eventLoop.execute { self.drain() } }
    }

    private func drain() {
        let writers = state.withLock { state -> [ChannelWriter] in
            let writers = state.pending
            state.pending.removeAll(keepingCapacity: true)
            state.isScheduled = false
            return writers
        }
        for writer in writers { writer.writeQueued() }
    }
}

/// One `LoopWriter` per event loop of a server.
final class LoopWriters: Sendable {
    private let writers = Locked<[ObjectIdentifier: LoopWriter]>([:])

    /// Runs `body` (which queues frames) with every loop writer held: one hop per loop after it.
    func holding<Result>(_ body: () throws -> Result) rethrows -> Result {
        let held = writers.withLock { Array($0.values) }
        for writer in held { writer.hold() }
        defer { for writer in held { writer.release() } }
        return try body()
    }

    /// Hops to the loops so far, and the loops.
    var statistics: (hops: Int, loops: Int) {
        let all = writers.withLock { Array($0.values) }
        return (all.reduce(0) { $0 + $1.hops }, all.count)
    }

    func writer(for eventLoop: any EventLoop) -> LoopWriter {
        writers.withLock { writers in
            if let writer = writers[ObjectIdentifier(eventLoop)] { return writer }
            let writer = LoopWriter(eventLoop: eventLoop)
            writers[ObjectIdentifier(eventLoop)] = writer
            return writer
        }
    }
}
