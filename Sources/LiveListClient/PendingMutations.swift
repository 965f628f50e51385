import LiveListWire

/// A client's mutations not yet answered, in number order, and what each answer or lost
/// connection does to them: the mutator's decisions, kept apart from its I/O. A mutation stays
/// until the server answers it, whoever waits for it (a caller, or no one: one restored from a
/// previous launch, or whose caller gave up), so that numbers are never skipped.
struct PendingMutations<Waiter> {
    struct Entry {
        var mutation: WireMutation
        var waiter: Waiter?
    }

    /// What to do with an answer.
    enum Decision {
        /// Hand the mutation's waiter, if any, its outcome.
        case finish(Waiter?, Result<WireMutated, WireError>)
        /// Send every waiting mutation again, in order, after a pause: one did not run (the server
        /// was busy), so the ones sent after it were refused as out of order.
        case resendAll
        /// The answer names no waiting mutation (a late duplicate): nothing to do.
        case ignore
    }

    let client: String
    private(set) var nextID: Int64
    private(set) var entries: [Entry] = []

    init(client: String, nextID: Int64, restoring restored: [WireMutation] = []) {
        self.client = client
        self.nextID = nextID
        for mutation in restored.sorted(by: { $0.id < $1.id }) where mutation.client == client {
            entries.append(Entry(mutation: mutation, waiter: nil))
            self.nextID = max(self.nextID, mutation.id + 1)
        }
    }

    /// Numbers a new mutation and keeps it until it is answered.
    mutating func add(name: String, arguments: [String: WireValue], waiter: Waiter) -> WireMutation {
        let mutation = WireMutation(client: client, id: nextID, name: name, arguments: arguments)
        nextID += 1
        entries.append(Entry(mutation: mutation, waiter: waiter))
        return mutation
    }

    /// Takes back the mutation numbered last, never sent: its number is the next one again.
    mutating func takeBackLast() {
        guard let last = entries.last, last.mutation.id == nextID - 1 else { return }
        entries.removeLast()
        nextID -= 1
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

    /// Lets go of every waiter (the mutator stopped); the mutations stay, to be sent again.
    mutating func releaseWaiters() -> [Waiter] {
        defer { for index in entries.indices { entries[index].waiter = nil } }
        return entries.compactMap(\.waiter)
    }
}
