/// Which of the commits a round decoded it may apply with the reads of its snapshot: a decision
/// as a value, tested without a database (`PgOutputTests`).
///
/// The round's result must be the query's result after exactly the commits it applied, so the
/// snapshot its reads run in must see those commits and no later one. Commits come in commit
/// order, and a snapshot sees a prefix of them — except that PostgreSQL makes a transaction
/// visible a moment after writing its commit record, so two transactions committing at once can
/// become visible in the other order. A snapshot taken in that moment sees a later commit
/// without an earlier one: its reads would show a state that never was. Such a round is retried
/// with a new snapshot instead.
enum _RoundSelection: Equatable, Sendable {
    /// Apply the first `count` commits; `reachedUnseen`: a commit the snapshot does not see came
    /// after them (it and what follows wait for the next round).
    case apply(count: Int, reachedUnseen: Bool)
    /// The snapshot sees a commit that follows one it does not see: take a new snapshot.
    case retry

    static func select(_ commits: [_DecodedCommit], seenBy snapshot: _PgSnapshot) -> _RoundSelection {
        guard let unseen = commits.firstIndex(where: { !snapshot.sees(committed: $0.xid) }) else {
            return .apply(count: commits.count, reachedUnseen: false)
        }
        if commits[(unseen + 1)...].contains(where: { snapshot.sees(committed: $0.xid) }) { return .retry }
        return .apply(count: unseen, reachedUnseen: true)
    }
}
