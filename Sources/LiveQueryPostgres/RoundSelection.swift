/// Which of the commits the stream brought a round may apply with the reads of its snapshot: a
/// decision as a value, tested without a database (`PgOutputTests`).
///
/// The round's result must be the query's result after exactly the commits it applied, so the
/// snapshot its reads run in must see those commits and no later one. Commits come in commit
/// order, and a snapshot sees a prefix of them — except that PostgreSQL makes a transaction
/// visible a moment after writing its commit record, so two transactions committing at once can
/// become visible in the other order. A snapshot taken in that moment sees a later commit
/// without an earlier one: its reads would show a state that never was. Such a round is retried
/// with a new snapshot instead.
enum RoundSelection: Equatable, Sendable {
    /// Apply the first `count` commits; `reachedUnseen`: a commit the snapshot does not see came
    /// after them (it and what follows wait for the next round).
    case apply(count: Int, reachedUnseen: Bool)
    /// The snapshot sees a commit that follows one it does not see: take a new snapshot.
    case retry

    /// What a round does with the next commit of the stream.
    enum Decision: Equatable, Sendable {
        /// The snapshot sees it, and every commit before it: apply it.
        case take
        /// The snapshot does not see it: it and every commit after it wait for the next round.
        case holdBack
        /// The snapshot sees it but not a commit before it: take a new snapshot.
        case retry
        /// It ends after every commit the snapshot can see: the round has all it applies.
        case stop
    }

    /// The decision for a commit that ends at `end`, by transaction `xid`, coming after one the
    /// snapshot does not see (`afterUnseen`) or not. `needed`: every commit the snapshot sees ends
    /// at or before it. A commit the snapshot sees is taken even past `needed` (the snapshot's
    /// word wins over a position worked out from the WAL's layout: its reads show the commit, so
    /// its changes must be applied with them).
    static func decide(end: PostgresLSN, xid: UInt32, seenBy snapshot: PostgresSnapshot, needed: PostgresLSN, afterUnseen: Bool) -> Decision {
        guard snapshot.sees(committed: xid) else { return end <= needed ? .holdBack : .stop }
        return afterUnseen ? .retry : .take
    }

    /// The decisions for a batch of commits that all end before `needed`.
    static func select(_ commits: [DecodedCommit], seenBy snapshot: PostgresSnapshot) -> RoundSelection {
        var unseen: Int?
        for (index, commit) in commits.enumerated() {
            switch decide(end: commit.endLSN, xid: commit.xid, seenBy: snapshot, needed: PostgresLSN(.max), afterUnseen: unseen != nil) {
            case .take, .stop: continue
            case .holdBack: if unseen == nil { unseen = index }
            case .retry: return .retry
            }
        }
        return .apply(count: unseen ?? commits.count, reachedUnseen: unseen != nil)
    }
}
