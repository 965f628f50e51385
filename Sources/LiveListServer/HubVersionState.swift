import LiveListWire

/// The version a hub's subscribers hold, as one value: the changesets counted so far (what a
/// counted version's sequence is), the version the last message for the current result named
/// (stored, never worked out again, so every `changes` starts where the last one ended), and when
/// the live query saw the last commit. Events in — the first result, a new result, a commit that
/// left the result as it was — and the versions out; no I/O.
struct HubVersionState {
    /// The versions' epoch (counted) or name (positioned).
    let epoch: String
    /// Whether versions are the database's commit positions (PostgreSQL) or counted here.
    let isPositioned: Bool
    /// The changesets delivered so far.
    private(set) var sequence: UInt64 = 0
    /// The version the last message for the current result named (`nil` before the first result).
    private(set) var announced: WireVersion?
    /// When the live query saw the last commit, in microseconds since 1970 (the `at` of changes).
    private(set) var observedAt: Int64?

    init(epoch: String, isPositioned: Bool) {
        self.epoch = epoch
        self.isPositioned = isPositioned
    }

    /// The version of the current result (the first result's before it is there).
    var version: WireVersion { announced ?? WireVersion(epoch: epoch, sequence: 0) }

    /// The version of a result the engine delivered: its position (positioned), or the number of
    /// changesets so far (counted).
    func version(at position: UInt64?) -> WireVersion {
        WireVersion(epoch: epoch, sequence: isPositioned ? position ?? 0 : sequence)
    }

    /// The first result, at `position`.
    mutating func started(at position: UInt64?) {
        announced = version(at: position)
    }

    /// A new result, at `position`, whose last commit the live query saw at `observedAt`:
    /// returns the sequence the changeset leads from.
    mutating func advanced(to position: UInt64?, observedAt: Int64) -> UInt64 {
        self.observedAt = observedAt
        let from = sequence
        sequence += 1
        announced = version(at: position)
        return from
    }

    /// The current result also stands at `later` (positioned versions): returns the version the
    /// subscribers held, or `nil` when `later` is not after it (nothing to tell).
    mutating func announce(_ later: WireVersion, observedAt: Int64?) -> WireVersion? {
        guard isPositioned, let held = announced, later.epoch == held.epoch, later.sequence > held.sequence else { return nil }
        announced = later
        if let observedAt { self.observedAt = observedAt }
        return held
    }
}
