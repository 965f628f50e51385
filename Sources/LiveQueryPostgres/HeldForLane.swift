/// What a query read apart on a lane is told once the lane hands it back
/// (``PostgresDatabaseRunner/deliver(_:to:)``): the lane's reads run off the engine's actor, so the
/// rounds never touch such a query meanwhile.
enum HeldForLane {
    /// A commit that touched its tables, with the relations as they were then.
    case commit(DecodedCommit, KnownRelations)
    /// Commits may have been missed after `heldThrough`.
    case lostTrack(PostgresLiveQueryError, heldThrough: UInt64)
    /// It was closed.
    case finish

    func tell(_ runner: any PostgresQueryFollowing) {
        switch self {
        case let .commit(commit, relations): runner.absorb(commit, relations: relations)
        case let .lostTrack(error, heldThrough): runner.lostTrack(error, heldThrough: heldThrough)
        case .finish: runner.finish()
        }
    }
}
