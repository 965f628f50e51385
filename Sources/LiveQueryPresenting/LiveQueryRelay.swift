import ListDiff
import ListPresenter
import LiveQueryCore

/// What a live query's ``ListPresenter/ListSource`` keeps and does, whatever its engine (SQLite's
/// ``LiveQuerySource``, PostgreSQL's `PostgresLiveQuerySource`): the newest result and failure, the
/// row cache kept on that result, and the subscribers, each handed `.initial` first, then every
/// update's changeset as it is (no diff) and every failure with a retry — `retrying`, the engine's
/// way to look again; a terminal failure (`isTerminal`) has none. An update, or a retry that
/// succeeds, ends a failure.
@MainActor
package final class LiveQueryRelay<ID: LiveIdentity, Record: Sendable> {
    package let cache: RowCache<ID, Record>
    package private(set) var result: LiveResult<ID>
    package private(set) var failure: LiveQueryError?
    private let receivers = ListSourceReceivers<LiveSection, LiveRow<ID>>()
    private let retrying: @Sendable () async throws -> Void

    /// Starts at `result` (the query's newest), keeping `cache` on it.
    package init(result: LiveResult<ID>, cache: RowCache<ID, Record>, retrying: @escaping @Sendable () async throws -> Void) {
        self.result = result
        self.cache = cache
        self.retrying = retrying
        cache.update(result: result)
    }

    /// Hands every event from now on to `receive`: first the newest result (and the failure, if
    /// the query failed since), then each update and failure.
    package func subscribe(_ receive: @escaping @MainActor (ListSourceEvent<LiveSection, LiveRow<ID>>) -> Void) -> ListSourceSubscription {
        receive(.initial(AnySectionedList(result), isComplete: result.isComplete))
        if let failure { receive(.failure(loadFailure(failure))) }
        return receivers.add(receive)
    }

    /// Takes the query's event: the result and cache follow it, then the subscribers hear it.
    package func receive(_ event: LiveQueryEvent<ID>) {
        switch event {
        case let .initial(result):
            let same = result.stateID == self.result.stateID
            self.result = result
            failure = nil
            cache.update(result: result)
            receivers.send(same ? .recovered(isComplete: result.isComplete) : .initial(AnySectionedList(result), isComplete: result.isComplete))
        case let .update(update):
            // An update to the state held already (the newest result read at the start) was handed on.
            if let state = update.result.stateID, state == result.stateID { return }
            result = update.result
            failure = nil
            // The rows the engine read at the commit are held first, so the cells the changeset
            // reloads show their new records in its batch.
            cache.update(with: update)
            receivers.send(.changes(update.changeset, isComplete: update.result.isComplete))
        case let .failure(error):
            failure = error
            receivers.send(.failure(loadFailure(error)))
        }
    }

    private func loadFailure(_ error: LiveQueryError) -> LoadFailure {
        // A terminal failure: the query has stopped; only reopening the database helps.
        guard !error.isTerminal else { return LoadFailure(error, retry: {}) }
        return LoadFailure(error) { [weak self] in
            Task { @MainActor in self?.retry() }
        }
    }

    /// Looks again; success clears the failure (an update it finds clears it too).
    private func retry() {
        let retrying = retrying
        Task { [weak self] in
            do {
                try await retrying()
                guard let self, failure != nil else { return }
                failure = nil
                receivers.send(.recovered(isComplete: result.isComplete))
            } catch let error as LiveQueryError {
                self?.receive(.failure(error))
            } catch {
                self?.receive(.failure(.underlying(error)))
            }
        }
    }
}
