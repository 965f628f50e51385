import Foundation
import GRDB
import ListDiff
import LiveQueryCore

/// Runs a live query's check for other connections' commits on the writer's queue soon after
/// the database's files change (``FileChangeMonitor``), one at a time however many events a
/// commit raises, and again at growing delays for about a second (``RecheckSchedule``): a WAL
/// commit is visible only once the writer has updated the shared-memory index, which raises no
/// file event.
///
/// `@unchecked Sendable`: `scheduled` and `monitor` are one `Locked` value; every other
/// property is set once in `init` (`core` is a weak reference, read atomically).
final class ExternalChangeWatch<ID: LiveIdentity>: @unchecked Sendable {
    private struct State {
        var scheduled = false
        var monitor: FileChangeMonitor?
    }

    private let state = Locked(State())
    private weak var core: SQLiteQueryRunner<ID>?
    private let writer: any DatabaseWriter
    private let fileIdentity: DatabaseFileIdentity?
    private let stopQuery: @Sendable (LiveQueryError) -> Void

    /// Watches `writer`'s files for `core`; `stopQuery` ends the query when the file was removed
    /// or replaced (reading through a connection to an unlinked file could roll another
    /// database's journal into it).
    init?(core: SQLiteQueryRunner<ID>, writer: any DatabaseWriter, stopQuery: @escaping @Sendable (LiveQueryError) -> Void) {
        self.core = core
        self.writer = writer
        self.stopQuery = stopQuery
        guard DatabaseFileIdentity.isFile(writer.path) else { return nil }
        fileIdentity = DatabaseFileIdentity.of(writer.path)
        let monitor = FileChangeMonitor(path: writer.path) { [weak self] in self?.schedule() }
        guard let monitor else { return nil }
        // Under the lock: the monitor runs already, and its first event may call `schedule()`
        // on its own queue before `init` returns (ThreadSanitizer saw the race).
        state.withLock { $0.monitor = monitor }
    }

    func schedule(recheck: Int = 0) {
        let proceed = state.withLock { state in
            guard !state.scheduled, state.monitor != nil else { return false }
            state.scheduled = true
            return true
        }
        guard proceed else { return }
        let path = writer.path
        let now = DatabaseFileIdentity.of(path)
        guard now == fileIdentity else {
            // Called from the monitor's queue: stop it from elsewhere.
            let monitor = state.withLock { state in
                defer { state.monitor = nil }
                return state.monitor
            }
            DispatchQueue.global().async { monitor?.stop() }
            stopQuery(now == nil ? .databaseGone("\(path) was removed") : .databaseReplaced(path: path))
            return
        }
        writer.asyncWriteWithoutTransaction { [weak self] db in
            guard let self else { return }
            state.withLock { $0.scheduled = false }
            guard let core, !core.channel.isFinished else { return }
            if let delay = RecheckSchedule.delay(after: recheck) {
                let (seconds, attoseconds) = delay.components
                let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
                    self?.schedule(recheck: recheck + 1)
                }
            }
            do {
                try core.checkExternalChanges(db)
            } catch {
                let failure = LiveQueryError.from(error, sql: nil)
                // Busy: the poll, or the next file event, tries again.
                if !failure.isBusy { core.channel.deliver(.failure(failure)) }
            }
        }
    }

    func stop() {
        let monitor = state.withLock { state in
            defer { state.monitor = nil }
            return state.monitor
        }
        monitor?.stop()
    }
}
