import LiveListWire

/// A client's mutations not yet answered, in number order, and what each answer or lost
/// connection does to them: the mutator's decisions, kept apart from its I/O.
struct _PendingMutations<Waiter> {
    struct Entry {
        var mutation: WireMutation
        var waiter: Waiter
    }

    /// What to do with an answer.
    enum Decision {
        /// Hand the waiter its mutation's outcome.
        case finish(Waiter, Result<WireMutated, WireError>)
        /// Send every waiting mutation again, in order, after a pause: one did not run (the server
        /// was busy), so the ones sent after it were refused as out of order.
        case resendAll
        /// The answer names no waiting mutation (a late duplicate): nothing to do.
        case ignore
    }

    let client: String
    private(set) var nextID: Int64
    private(set) var entries: [Entry] = []

    init(client: String, nextID: Int64) {
        self.client = client
        self.nextID = nextID
    }

    /// Numbers a new mutation and keeps it until it is answered.
    mutating func add(name: String, arguments: [String: WireValue], waiter: Waiter) -> WireMutation {
        let mutation = WireMutation(client: client, id: nextID, name: name, arguments: arguments)
        nextID += 1
        entries.append(Entry(mutation: mutation, waiter: waiter))
        return mutation
    }

    /// What to send on a new connection: every mutation waiting, in number order.
    var toResend: [WireMutation] { entries.map(\.mutation) }

    /// Takes in `mutated`.
    mutating func receive(_ mutated: WireMutated) -> Decision {
        guard mutated.client == client, let index = entries.firstIndex(where: { $0.mutation.id == mutated.id }) else { return .ignore }
        return .finish(entries.remove(at: index).waiter, .success(mutated))
    }

    /// Takes in an error that names a mutation. `mutationUnavailable` (it used no number) sends
    /// every waiting one again; `mutationOutOfOrder` behind an earlier mutation still waiting is
    /// the echo of that one not running, and waits for the resend; any other error ends the
    /// mutation with it (its number is used).
    mutating func receive(_ error: WireError) -> Decision {
        guard let named = error.mutation, named.client == client,
              let index = entries.firstIndex(where: { $0.mutation.id == named.id }) else { return .ignore }
        switch error.code {
        case .mutationUnavailable: return .resendAll
        case .mutationOutOfOrder where index > 0: return .ignore
        default: return .finish(entries.remove(at: index).waiter, .failure(error))
        }
    }

    /// Ends every waiting mutation (the mutator stopped); their numbers stay used.
    mutating func removeAll() -> [Waiter] {
        defer { entries = [] }
        return entries.map(\.waiter)
    }
}
