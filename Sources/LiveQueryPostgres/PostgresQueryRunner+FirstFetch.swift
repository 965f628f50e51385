import Foundation
import ListDiff
import LiveQueryCore
import PostgresNIO

/// The rest of a first fetch: the index's builder where rows need no key assigned, else the rows.
enum FirstFetchRest: Sendable {
    case built(BuilderSink)
    case rows([ReadRow])
}

/// An index builder fed by the statement that reads the rows, row by row as they arrive.
/// `@unchecked Sendable`: only the reading connection's event loop appends to it, one row after
/// the other, and it is handed over (through the runner's lock) only once the statement has ended.
final class BuilderSink: @unchecked Sendable {
    private(set) var builder: IndexBuilder

    init(_ builder: IndexBuilder) { self.builder = builder }

    func append(_ entry: IndexEntry) { builder.append(entry) }
}

/// A large query opens with its first screen; the rest is read beside the rounds, in the very
/// snapshot the first screen was read in (exported to a connection of its own), and completed in
/// a later round with the commits absorbed meanwhile, re-read in that round's snapshot.
extension PostgresQueryRunner {
    var hasRest: Bool { firstFetch.withLock { $0.rest != nil } }

    /// Whether the result is whole (not a first screen waiting for the rest).
    var isWhole: Bool { firstFetch.withLock { $0.isWhole } }

    /// Reads the whole result on `session` (a transaction that imported the first screen's
    /// snapshot), commits and closes it, keeps the rows for the next round and calls `then`.
    func readRest(on session: PostgresSession, then: @escaping @Sendable () -> Void) {
        let plan = plan
        Task {
            let outcome: Result<FirstFetchRest, PostgresLiveQueryError>
            do throws(PostgresLiveQueryError) {
                if plan.integerKeys {
                    // Each row goes into the index's builder where it arrives: nothing else is held.
                    let sink = BuilderSink(IndexBuilder(layout: plan.layout, canonicalIdentity: Self.canonicalizer()))
                    _ = try await session.decoded(plan.fetchSQL, plan.arguments) { row in
                        var none = RowKeys(integerKeys: true)
                        sink.append(PostgresRows.entry(PostgresRows.decode(row, plan, columns: row.count), plan, ordinal: 0, &none))
                    }
                    outcome = .success(.built(sink))
                } else {
                    outcome = .success(.rows(try await session.decoded(plan.fetchSQL, plan.arguments) { PostgresRows.decode($0, plan, columns: $0.count) }))
                }
            } catch {
                outcome = .failure(error)
            }
            _ = try? await session.execute("COMMIT")
            try? await session.connection.close()
            firstFetch.withLock { $0.arrived(outcome) }
            then()
        }
    }

    /// Completes the index with the rest of the first fetch and applies what commits did
    /// meanwhile, re-read in this round's snapshot; one update from the first screen to the whole,
    /// which holds from the last commit that touched the query since it opened.
    func completeFirstFetch(round: UInt64, _ session: PostgresSession) async throws(PostgresLiveQueryError) {
        guard case let (outcome, holdsFrom)? = firstFetch.withLock({ $0.rest }), case let .building(touched, refetch) = tracker.state.phase else { return }
        var reads = PrefetchedReads(entries: [])
        var builder: IndexBuilder?
        var failure: PostgresLiveQueryError?
        switch outcome {
        case let .failure(error):
            failure = error
        case .success where tracker.state.isBehind:
            // Commits were lost while the rest was read (a failure was told): the rest and the
            // touched rows do not make the result; the next round refetches it whole.
            break
        case let .success(rest):
            var whole = IndexBuilder(layout: plan.layout, canonicalIdentity: Self.canonicalizer())
            switch rest {
            case let .built(sink): whole = sink.builder
            case let .rows(rows): for entry in PostgresRows.entries(rows, plan, &keys) { whole.append(entry) }
            }
            let count = whole.count
            failure = try await inSavepoint(session) { () throws(PostgresLiveQueryError) in
                if refetch != nil {
                    var fresh = keys
                    reads = PrefetchedReads(entries: try await PostgresRows.read(plan, plan.fetchSQL, .text(plan.arguments), &fresh, session))
                    keys = fresh
                } else if !touched.isEmpty {
                    reads = try await reread(touched, session)
                }
            }
            if failure == nil {
                tracker.statistics.update { $0.rowsRead += count }
                builder = whole
            }
        }
        if let failure { tracker.reportFailure(LiveQueryError(failure)) }
        if builder == nil { _ = work.failed(at: .now) }
        if builder != nil {
            // Commits lost meanwhile (a failure) leave the start unknown: the round's position then.
            delivering(.read(from: tracker.state.isBehind ? round : holdsFrom)) { tracker.finishBuild(builder, reads) }
        } else {
            tracker.finishBuild(builder, reads)
        }
        if builder == nil { deliveries.withLock { $0.positions.failed(heldThrough: nil) } }
        finishWaiting()
    }

    /// Returns once the result is whole (or the query stopped).
    func waitForWholeResult() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queued = firstFetch.withLock { $0.wait(continuation) }
            if !queued { continuation.resume() }
        }
    }

    /// Wakes whoever waits for the whole result (it is whole, or the query stopped).
    func finishWaiting() {
        let waiting = firstFetch.withLock { $0.complete() }
        for waiter in waiting { waiter.resume() }
    }
}
