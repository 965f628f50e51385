import LiveQueryCore

/// What the engine asks of one open query, whatever its identity type.
protocol PostgresQueryFollowing: AnyObject, Sendable {
    /// Every table the query reads: their commits concern it.
    var relationsRead: Set<UInt32> { get }
    /// Whether the next round has work for it even if nothing was committed (it is behind, its
    /// plan is stale, or the rest of its first fetch arrived).
    var needsRound: Bool { get }
    /// Whether rounds are to come back to it: it has work now (``needsRound``), or will have
    /// (it is behind and tries again soon, or waits for the rest of its first fetch).
    var awaitsRound: Bool { get }
    /// Notes what a committed transaction that touched the query's tables did to them.
    func absorb(_ commit: DecodedCommit, relations: KnownRelations)
    /// Applies the absorbed transactions, reading in the round's snapshot, which sees exactly the
    /// commits up to `round`. A failing read is the query's failure; a lost connection throws
    /// (the round fails, for every query). `guarded`: each read in a savepoint of its own, so that
    /// a failing one leaves the transaction usable; unguarded (one statement less each side), a
    /// failing read aborts the transaction, and `false` says the round must end there.
    func apply(round: UInt64, _ session: PostgresSession, guarded: Bool) async throws(PostgresLiveQueryError) -> Bool
    /// Whether its rounds read its whole result again (a refetched shape): such a query is read
    /// apart on a lane of its own (`PostgresDatabaseRunner+Lane.swift`), so that the others' updates never wait behind its reads.
    var refetches: Bool { get }
    /// Whether it is being read apart: no round applies it meanwhile.
    var isDetached: Bool { get }
    /// Takes what it is to be read apart for (the commits absorbed, the tracker's decision), now:
    /// commits absorbed later wait for the next time.
    func detach()
    /// Its lane hands it back: the rounds apply it again.
    func reattach()
    /// Its read apart was cut (the lane's connection went): what it took is read again by a
    /// round, whole, without a failure told.
    func abandonApply()
    /// The engine may have lost commits after `heldThrough`, or a round failed: the query says so
    /// and refetches once it can.
    func lostTrack(_ error: PostgresLiveQueryError, heldThrough: UInt64)
    func finish()

    /// How the query is read and kept now.
    var plan: PostgresPlan { get }
    /// Queries that differ only in their arguments re-read a round's rows in one statement
    /// (`RereadBatch`): what such queries share (the statement and the kinds of their
    /// arguments), when this one's next apply is a plain re-read; else `nil`.
    var batchKey: String? { get }
    /// Resolves the joined and aggregated rows its commits changed into the rows they reach,
    /// before a batch is taken (in the round's snapshot; `cache` shares them between queries).
    /// `false` when a lookup failed: the query says so, and the round's transaction is aborted.
    func resolveLookups(_ session: PostgresSession, _ cache: inout RoundLookups) async throws(PostgresLiveQueryError) -> Bool
    /// Sends the lookups ``resolveLookups(_:_:)`` will read (`cache` holds them), so that the
    /// queries' lookups run back to back.
    func sendLookups(_ session: PostgresSession, _ cache: inout RoundLookups)
    /// Takes the round's work for a batch; `false` (nothing taken) unless it is a re-read.
    func takeBatched() -> Bool
    /// How many rows the work taken for a batch re-reads.
    var batchedRows: Int { get }
    /// Its row of the batch: its arguments, then the identities of the rows it re-reads (as text).
    var batchRow: (arguments: [SQLValue], identities: [String]) { get }
    /// Puts the work taken back: the batch was not read.
    func giveBackBatched()
    /// Applies the work taken with its rows of the batch. A failure is the query's; `false`
    /// when it aborted the round's transaction (only a grouped query reads more: the rows of the
    /// groups that entered its result).
    func finishBatched(_ rows: [ReadRow], round: UInt64, _ session: PostgresSession) async throws(PostgresLiveQueryError) -> Bool
}
