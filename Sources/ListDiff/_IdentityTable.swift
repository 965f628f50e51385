/// Pairs identifiers of the old state with identifiers of the new state, occurrence by occurrence.
///
/// Why not `Dictionary<ID, [Int]>`: the diff spends most of its time here, and a flat
/// open-addressing table of `Int32` slots with the occurrences chained through one array makes
/// one hash per element and no allocation per key. Duplicates: the n-th old occurrence of an
/// identifier pairs with its n-th new occurrence.
@usableFromInline
struct _IdentityTable<ID: Hashable> {
    /// Slot → key number, or -1 when empty. Capacity is a power of two at least twice the keys.
    @usableFromInline var slots: [Int32]
    @usableFromInline var mask: Int
    /// Per key: the identifier, its hash, the first unpaired old occurrence, the last old
    /// occurrence (while building) and whether the new state already used it once.
    @usableFromInline var keys: [ID] = []
    @usableFromInline var keyHashes: [Int] = []
    @usableFromInline var nextUnpaired: [Int32] = []
    @usableFromInline var lastOld: [Int32] = []
    @usableFromInline var seenInNew: [Bool] = []
    /// Per old occurrence: the next old occurrence of the same identifier, or -1.
    @usableFromInline var nextOccurrence: [Int32]
    @usableFromInline var duplicates: Set<ID> = []

    @inlinable
    init(oldCount: Int, newCount: Int) {
        var capacity = 16
        while capacity < 2 * (oldCount + newCount / 4 + 1) { capacity &<<= 1 }
        slots = [Int32](repeating: -1, count: capacity)
        mask = capacity - 1
        nextOccurrence = [Int32](repeating: -1, count: oldCount)
        keys.reserveCapacity(oldCount)
        keyHashes.reserveCapacity(oldCount)
        nextUnpaired.reserveCapacity(oldCount)
        lastOld.reserveCapacity(oldCount)
        seenInNew.reserveCapacity(oldCount)
    }

    /// The key number of `id`, adding it when absent; `isNew` says which happened.
    @inlinable
    mutating func key(for id: ID, isNew: inout Bool) -> Int {
        let hash = id.hashValue
        var slot = hash & mask
        while true {
            let key = Int(slots[slot])
            if key < 0 { break }
            if keyHashes[key] == hash && keys[key] == id {
                isNew = false
                return key
            }
            slot = (slot &+ 1) & mask
        }
        if keys.count * 2 >= slots.count { grow() }
        let key = keys.count
        keys.append(id)
        keyHashes.append(hash)
        nextUnpaired.append(-1)
        lastOld.append(-1)
        seenInNew.append(false)
        var free = hash & mask
        while slots[free] >= 0 { free = (free &+ 1) & mask }
        slots[free] = Int32(truncatingIfNeeded: key)
        isNew = true
        return key
    }

    @inlinable
    mutating func grow() {
        let capacity = slots.count * 2
        slots = [Int32](repeating: -1, count: capacity)
        mask = capacity - 1
        for key in keys.indices {
            var slot = keyHashes[key] & mask
            while slots[slot] >= 0 { slot = (slot &+ 1) & mask }
            slots[slot] = Int32(truncatingIfNeeded: key)
        }
    }

    /// Records the old occurrence number `index` of `id`. Call in increasing `index` order.
    @inlinable
    mutating func addOld(_ id: ID, at index: Int) {
        var isNew = false
        let key = key(for: id, isNew: &isNew)
        let occurrence = Int32(truncatingIfNeeded: index)
        if isNew {
            nextUnpaired[key] = occurrence
        } else {
            nextOccurrence[Int(lastOld[key])] = occurrence
            duplicates.insert(id)
        }
        lastOld[key] = occurrence
    }

    /// Pairs the next new occurrence of `id` with its first unpaired old occurrence; -1 if none.
    @inlinable
    mutating func pairNew(_ id: ID) -> Int32 {
        var isNew = false
        let key = key(for: id, isNew: &isNew)
        if seenInNew[key] { duplicates.insert(id) }
        seenInNew[key] = true
        let old = nextUnpaired[key]
        if old >= 0 { nextUnpaired[key] = nextOccurrence[Int(old)] }
        return old
    }
}
