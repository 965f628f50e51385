import ListDiff
import NIOCore
import PostgresNIO

/// Which of a connection's statements are prepared, by text: what a statement about to run does —
/// runs the one prepared, waits for the prepare under way, or prepares it — and which prepared
/// statements go when there are more than ``capacity`` (the least recently used that are ready).
/// A value, tested without a database (`PreparedStatementCacheTests`); `Handle` is what a prepare
/// gives back, `Waiter` what waits for one.
///
/// A round runs the same few statements on every commit (re-reads, lookups, each query's batch);
/// PostgreSQL spends most of such a statement's time planning it when it comes as text each time.
/// Prepared once per connection, it is planned once, and PostgreSQL may keep a generic plan.
struct PreparedStatementCache<Handle, Waiter> {
    /// What a statement about to run does.
    enum Use {
        /// Run it with this prepared statement, the `generation`th prepared on the connection.
        case run(Handle, generation: UInt64)
        /// Its prepare is under way: wait for it (``prepared(_:as:)`` gives the waiter back).
        case wait
        /// Prepare it, then call ``prepared(_:as:)`` or ``failed(_:)``.
        case prepare
    }

    private enum State {
        case preparing([Waiter])
        case ready(Handle, generation: UInt64)
    }

    private struct Entry {
        var state: State
        var lastUse: UInt64
    }

    /// How many ready statements a connection keeps.
    let capacity: Int
    private var entries: [String: Entry] = [:]
    private var clock: UInt64 = 0
    private var generations: UInt64 = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// How many statements are prepared or being prepared.
    var count: Int { entries.count }

    /// What `sql` does now; `waiter` is kept when it is to wait.
    mutating func use(_ sql: String, waiter: Waiter) -> Use {
        clock += 1
        guard var entry = entries[sql] else {
            entries[sql] = Entry(state: .preparing([]), lastUse: clock)
            return .prepare
        }
        entry.lastUse = clock
        defer { entries[sql] = entry }
        switch entry.state {
        case let .ready(handle, generation):
            return .run(handle, generation: generation)
        case var .preparing(waiters):
            waiters.append(waiter)
            entry.state = .preparing(waiters)
            return .wait
        }
    }

    /// `sql` is prepared as `handle`: the waiters to run it, and the statements to let go (the
    /// least recently used ready ones beyond ``capacity``; never `sql`, never one being prepared).
    /// - Complexity: O(statements) when one is let go.
    mutating func prepared(_ sql: String, as handle: Handle) -> (waiters: [Waiter], evicted: [Handle]) {
        guard var entry = entries[sql], case let .preparing(waiters) = entry.state else { return ([], []) }
        generations += 1
        entry.state = .ready(handle, generation: generations)
        entries[sql] = entry
        var evicted: [Handle] = []
        while entries.count > capacity {
            var oldest: (sql: String, handle: Handle, lastUse: UInt64)?
            for (text, other) in entries where text != sql {
                guard case let .ready(otherHandle, _) = other.state else { continue }
                if oldest.map({ other.lastUse < $0.lastUse }) ?? true { oldest = (text, otherHandle, other.lastUse) }
            }
            guard let oldest else { break }
            entries[oldest.sql] = nil
            evicted.append(oldest.handle)
        }
        return (waiters, evicted)
    }

    /// `sql`'s prepare failed: its waiters, to fail; the next use prepares it again.
    mutating func failed(_ sql: String) -> [Waiter] {
        guard let entry = entries[sql], case let .preparing(waiters) = entry.state else { return [] }
        entries[sql] = nil
        return waiters
    }

    /// `sql`'s `generation`th statement no longer fits its tables (or the server lost it): its
    /// handle, to let go; the next use prepares it again. `nil` when that statement is gone
    /// already — another run found it out first, and the one prepared since stays.
    mutating func discard(_ sql: String, generation: UInt64) -> Handle? {
        guard let entry = entries[sql], case let .ready(handle, current) = entry.state, current == generation else { return nil }
        entries[sql] = nil
        return handle
    }

    /// The server lost prepared statements (`DEALLOCATE ALL`, `DISCARD ALL`, a pooler between):
    /// every ready one, to let go; each is prepared again when next used.
    mutating func discardAll() -> [Handle] {
        var handles: [Handle] = []
        for (sql, entry) in entries {
            guard case let .ready(handle, _) = entry.state else { continue }
            entries[sql] = nil
            handles.append(handle)
        }
        return handles
    }
}

/// A connection's prepared statements (``PreparedStatementCache``), touched only on the
/// connection's event loop: statements are written to the connection there, in the order decided,
/// so a statement let go is closed after every run of it already sent, and a statement's runs wait
/// for its prepare.
final class PreparedStatements: Sendable {
    /// How many prepared statements a connection keeps: a round's statements for a few hundred
    /// queries, each a plan held in the server process (a batch's grows with its rows, at most
    /// ``RereadBatch/maximumRows(arguments:)``).
    static let capacity = 200

    typealias Waiter = @Sendable (Result<PreparedQuery, any Error>) -> Void

    private let cache: NIOLoopBoundBox<PreparedStatementCache<PreparedQuery, Waiter>>
    private let connection: PostgresConnection
    private let counts = Locked((prepares: 0, outdated: 0, losses: 0))

    /// Prepares sent, and statements let go because their tables changed shape or the server lost
    /// them (for the tests).
    var counted: (prepares: Int, outdated: Int) { counts.withLock { ($0.prepares, $0.outdated) } }

    /// Whether statements are still prepared on this connection: not once the server has lost them
    /// twice — a pooler between that hands each transaction to another server process (PgBouncer
    /// in transaction mode, without `max_prepared_statements`) loses them on every round, and the
    /// statements are then sent as text.
    var preparing: Bool { counts.withLock { $0.losses < 2 } }

    init(_ connection: PostgresConnection, capacity: Int = PreparedStatements.capacity) {
        self.connection = connection
        cache = .makeBoxSendingValue(PreparedStatementCache(capacity: capacity), eventLoop: connection.eventLoop)
    }

    /// Calls `body` on the connection's event loop with `sql` prepared: at once when it is, once its
    /// prepare ends otherwise. `earlier` is the statement's generation when it was prepared before
    /// this call asked for it (it may no longer fit its tables: ``discard(_:generation:)``), `nil`
    /// when it was prepared for this call or while it waited (it fits them).
    func with(_ sql: String, _ body: @escaping @Sendable (Result<PreparedQuery, any Error>, _ earlier: UInt64?) -> Void) {
        let loop = connection.eventLoop
        loop.execute { [self] in
            switch cache.value.use(sql, waiter: { body($0, nil) }) {
            case let .run(prepared, generation):
                body(.success(prepared), generation)
            case .wait:
                break
            case .prepare:
                counts.withLock { $0.prepares += 1 }
                connection.prepare(query: sql).hop(to: loop).whenComplete { [self] result in
                    switch result {
                    case let .success(prepared):
                        let (waiters, evicted) = cache.value.prepared(sql, as: prepared)
                        body(.success(prepared), nil)
                        for waiter in waiters { waiter(.success(prepared)) }
                        for old in evicted { close(old) }
                    case let .failure(error):
                        let waiters = cache.value.failed(sql)
                        body(.failure(error), nil)
                        for waiter in waiters { waiter(.failure(error)) }
                    }
                }
            }
        }
    }

    /// Lets go of `sql`'s `generation`th statement, which no longer fits its tables: the next use
    /// prepares it again. When the server no longer has it (`lost`), it may have lost them all: every
    /// statement is let go (a Close of one it does not have is no error).
    func discard(_ sql: String, generation: UInt64, lost: Bool) {
        connection.eventLoop.execute { [self] in
            let old = lost ? cache.value.discardAll() : cache.value.discard(sql, generation: generation).map { [$0] } ?? []
            counts.withLock {
                $0.outdated += old.count
                // Counted once for all the statements it lost: runs decided before it was found
                // out find nothing left to let go.
                if lost, !old.isEmpty { $0.losses += 1 }
            }
            for statement in old { close(statement) }
        }
    }

    /// Closes a statement on the server; one that cannot be closed goes with its connection.
    private func close(_ prepared: PreparedQuery) {
        prepared.deallocate().whenComplete { _ in }
    }
}
