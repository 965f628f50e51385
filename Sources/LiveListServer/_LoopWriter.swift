import Foundation
import NIOCore

/// Writes the frames of many connections on one event loop with one hop per burst: a commit's
/// changeset queued in 5,000 outboxes costs one `execute` on each loop, not a task wake-up and a
/// hop per connection.
///
/// While held (a hub sending one commit to its subscribers), it only collects: the hop comes
/// at the release, so a commit costs one hop per loop however the loop and the hub interleave.
///
/// `@unchecked Sendable`: `pending`, `isScheduled`, `holds` and `hops` are read and written under
/// `lock` only; the writers are drained on `eventLoop`.
final class _LoopWriter: @unchecked Sendable {
    let eventLoop: any EventLoop
    private let lock = NSLock()
    private var pending: [_ChannelWriter] = []
    private var isScheduled = false
    private var holds = 0
    /// Hops to the loop so far (the tests count them).
    private var hopCount = 0

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Asks for `writer`'s frames to be written on the next turn of the loop.
    func schedule(_ writer: _ChannelWriter) {
        hop(if: lock.withLock { () -> Bool in
            pending.append(writer)
            return claimHop()
        })
    }

    /// Collects without hopping until ``release()``.
    func hold() {
        lock.withLock { holds += 1 }
    }

    func release() {
        hop(if: lock.withLock { () -> Bool in
            holds -= 1
            return claimHop()
        })
    }

    var hops: Int { lock.withLock { hopCount } }

    /// Under the lock: whether the caller should hop now.
    private func claimHop() -> Bool {
        guard !isScheduled, holds == 0, !pending.isEmpty else { return false }
        isScheduled = true
        hopCount += 1
        return true
    }

    private func hop(if claimed: Bool) {
        if claimed { eventLoop.execute { self.drain() } }
    }

    private func drain() {
        let writers = lock.withLock { () -> [_ChannelWriter] in
            let writers = pending
            pending.removeAll(keepingCapacity: true)
            isScheduled = false
            return writers
        }
        for writer in writers { writer.writeQueued() }
    }
}

/// One `_LoopWriter` per event loop of a server.
///
/// `@unchecked Sendable`: `writers` is read and written under `lock` only.
final class _LoopWriters: @unchecked Sendable {
    private let lock = NSLock()
    private var writers: [ObjectIdentifier: _LoopWriter] = [:]

    /// Runs `body` (which queues frames) with every loop writer held: one hop per loop after it.
    func holding<Result>(_ body: () throws -> Result) rethrows -> Result {
        let held = lock.withLock { Array(writers.values) }
        for writer in held { writer.hold() }
        defer { for writer in held { writer.release() } }
        return try body()
    }

    /// Hops to the loops so far, and the loops.
    var statistics: (hops: Int, loops: Int) {
        let all = lock.withLock { Array(writers.values) }
        return (all.reduce(0) { $0 + $1.hops }, all.count)
    }

    func writer(for eventLoop: any EventLoop) -> _LoopWriter {
        lock.withLock {
            if let writer = writers[ObjectIdentifier(eventLoop)] { return writer }
            let writer = _LoopWriter(eventLoop: eventLoop)
            writers[ObjectIdentifier(eventLoop)] = writer
            return writer
        }
    }
}
