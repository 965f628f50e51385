import LiveListWire
import LiveQueryCore

/// How a shared live query names the versions of its results on the wire.
///
/// - Counted (SQLite): an epoch of this live query's own, drawn at random, and the number of
///   changesets since it began. A version is good on this server, for this live query's life.
/// - Positioned (PostgreSQL): the engine's positions (commit positions), under an epoch made of the
///   positions' name and a digest of the query's definition and arguments — the same on every
///   server over the same database, so a client resumes on any of them. A result stands for every
///   position it holds at (``ServedLiveQuery/holds(_:at:)``); the hub keeps the version it
///   announced last (`HubState`).
struct HubVersions: Sendable {
    let query: any ServedLiveQuery
    /// Counted: the epoch. Positioned: the digest that follows the positions' name.
    private let suffix: String
    let isPositioned: Bool

    init(query: any ServedLiveQuery, key: HubKey, definition: String) {
        self.query = query
        isPositioned = query.positionsName != nil
        if isPositioned {
            suffix = String(Self.digest(key.description + "\u{2}" + definition), radix: 36)
        } else {
            var generator = SystemRandomNumberGenerator()
            suffix = String(generator.next() as UInt64, radix: 36)
        }
    }

    /// The epoch of the versions now (positions' names change when the database's timeline does).
    var epoch: String {
        guard let name = query.positionsName else { return suffix }
        return String((name + "-" + suffix).prefix(64))
    }

    /// FNV-1a, 64 bits: stable across processes and machines (Swift's hashing is seeded per process).
    static func digest(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}
