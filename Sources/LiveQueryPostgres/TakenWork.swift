/// Where the work a query's apply takes is held between its taking and its carrying out, as one
/// value: nowhere (the rounds take the query's work as they apply it), taken for a round's batch
/// of re-reads, or read apart on a lane — with the work it was detached for until the lane's
/// apply takes it. A query read apart is in no batch, and work taken is carried out (or given
/// back) once. No I/O: `PostgresQueryRunner` holds it on the engine actor (or its lane's task,
/// while read apart).
enum TakenWork<Work> {
    /// Nothing taken: the rounds apply the query.
    case none
    /// Taken for a batch of re-reads in the round under way.
    case batched(Work)
    /// Read apart on a lane: the work it was detached for, until its apply takes it (`nil` then).
    case detached(Work?)

    /// Whether it is read apart: no round applies it, nor batches it, meanwhile.
    var isDetached: Bool {
        if case .detached = self { return true }
        return false
    }

    /// The work taken for a batch.
    var batched: Work? {
        if case let .batched(work) = self { return work }
        return nil
    }

    /// The work it was detached for, not taken yet.
    var detached: Work? {
        if case let .detached(work) = self { return work }
        return nil
    }

    /// Holds `work` for a batch: `false` (nothing held) when work is held already, or the query
    /// is read apart — the caller gives `work` back.
    mutating func batch(_ work: Work) -> Bool {
        guard case .none = self else { return false }
        self = .batched(work)
        return true
    }

    /// Takes the work held for a batch (to read it, or give it back).
    mutating func takeBatched() -> Work? {
        guard case let .batched(work) = self else { return nil }
        self = .none
        return work
    }

    /// Read apart, for `work`. A round detaches a query once its batches were read or given back,
    /// so no batch's work is held then.
    mutating func detach(_ work: Work) {
        self = .detached(work)
    }

    /// Takes the work it was detached for; it stays read apart until handed back.
    mutating func takeDetached() -> Work? {
        guard case let .detached(work) = self else { return nil }
        self = .detached(nil)
        return work
    }

    /// The lane hands it back: the rounds apply it again. Work it was detached for and did not
    /// apply (its lane failed first) goes: the query reads its result again whole.
    mutating func handBack() {
        if case .detached = self { self = .none }
    }
}
