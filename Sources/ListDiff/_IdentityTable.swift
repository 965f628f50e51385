/// Pairs identifiers of the old state with identifiers of the new state, occurrence by occurrence.
///
/// Why not `Dictionary<ID, [Int]>`: the diff spends most of its time here. This is a flat
/// open-addressing table whose slots pack a 32-bit hash tag with an entry number, so a probe
/// touches one slot and, only when the tag matches, one small entry holding the identifier inline;
/// occurrences of a duplicated identifier are chained through one `Int32` array. One hash per
/// element, no allocation per key. The n-th old occurrence of an identifier pairs with its n-th
/// new occurrence.
///
/// Callers hash a whole side first and probe afterwards: a probe loop free of hashing is short
/// enough for the processor to overlap several cache misses, which halves the time of large
/// diffs. It is a non-copyable struct rather than a class because class properties pay a dynamic
/// exclusivity check on every access, which doubled the diff's time.
@usableFromInline
struct _IdentityTable<ID: Hashable>: ~Copyable {
    @usableFromInline
    struct Entry {
        @usableFromInline var id: ID
        /// `(first unpaired old occurrence + 1) << 1 | seen-in-new`, packed so that an entry of a
        /// 16-byte identifier takes 20 bytes: the table of a 5k-row diff then stays below the
        /// allocator's mmap threshold and costs no page faults per diff.
        @usableFromInline var state: UInt32

        @inlinable
        init(id: ID, nextUnpaired: Int32) {
            self.id = id
            self.state = UInt32(bitPattern: nextUnpaired &+ 1) << 1
        }

        /// The first old occurrence not yet paired, or -1.
        @inlinable
        var nextUnpaired: Int32 {
            get { Int32(bitPattern: state >> 1) &- 1 }
            set { state = UInt32(bitPattern: newValue &+ 1) << 1 | (state & 1) }
        }

        /// Whether the new state already used this identifier once (duplicate detection).
        @inlinable
        var seenInNew: Bool {
            get { state & 1 != 0 }
            set { state = newValue ? state | 1 : state & ~1 }
        }
    }

    /// 0 when empty, else `tag << 32 | (entry + 1)`; capacity is a power of two.
    @usableFromInline var slots: UnsafeMutablePointer<UInt64>
    @usableFromInline var capacity: Int
    @usableFromInline var entries: [Entry] = []
    /// Per old occurrence: the next old occurrence of the same identifier, or -1.
    @usableFromInline var nextOccurrence: UnsafeMutablePointer<Int32>
    @usableFromInline var duplicates: Set<ID> = []
    /// The byte-hash key when `ID` is a `BitwiseIdentifier`, else `nil` (standard hashing).
    @usableFromInline let byteHashSeed: (UInt64, UInt64)?

    @inlinable
    init(oldCount: Int, newCount: Int) {
        // At most 3/4 full: linear probing stays short, and the slots of a 5k-row diff fit in 64 KiB.
        var capacity = 16
        while capacity * 3 < 4 * (oldCount + newCount / 8 + 1) { capacity &<<= 1 }
        self.capacity = capacity
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: 0, count: capacity)
        nextOccurrence = .allocate(capacity: max(oldCount, 1))
        nextOccurrence.initialize(repeating: -1, count: max(oldCount, 1))
        entries.reserveCapacity(oldCount + newCount / 8)
        byteHashSeed = _IdentifierHashing.usesBytes(ID.self) ? _IdentifierHashing.seed : nil
    }

    @inlinable
    deinit {
        slots.deallocate()
        nextOccurrence.deallocate()
    }

    /// The hash this table uses for `id`.
    @inlinable @inline(__always)
    func hash(_ id: ID) -> Int {
        if let byteHashSeed { return _IdentifierHashing.bytesHash(id, seed: byteHashSeed) }
        return id.hashValue
    }

    /// The entry number of `id`, or -1; `slot` is where it is or where it would go.
    @inlinable
    func find(_ id: ID, hash: Int, slot: inout Int) -> Int {
        let mask = capacity &- 1
        let tag = UInt64(truncatingIfNeeded: UInt(bitPattern: hash) >> 32)
        slot = hash & mask
        while true {
            let packed = slots[slot]
            if packed == 0 { return -1 }
            if packed >> 32 == tag {
                let entry = Int(truncatingIfNeeded: packed & 0xFFFF_FFFF) &- 1
                if entries[entry].id == id { return entry }
            }
            slot = (slot &+ 1) & mask
        }
    }

    /// Adds an entry for `id` at `slot` (found empty by `find`), growing the table at 3/4 full.
    @inlinable
    mutating func insert(_ entry: Entry, hash: Int, slot: Int) -> Int {
        let number = entries.count
        entries.append(entry)
        if entries.count &* 4 > capacity &* 3 {
            grow()
        } else {
            slots[slot] = Self.pack(hash: hash, entry: number)
        }
        return number
    }

    @inlinable
    static func pack(hash: Int, entry: Int) -> UInt64 {
        (UInt64(truncatingIfNeeded: UInt(bitPattern: hash) >> 32) << 32) | UInt64(truncatingIfNeeded: entry &+ 1)
    }

    @inlinable
    mutating func grow() {
        slots.deallocate()
        capacity &<<= 1
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: 0, count: capacity)
        let mask = capacity &- 1
        for number in entries.indices {
            let hash = hash(entries[number].id)
            var slot = hash & mask
            while slots[slot] != 0 { slot = (slot &+ 1) & mask }
            slots[slot] = Self.pack(hash: hash, entry: number)
        }
    }

    /// Records the old occurrence number `index` of `id`, whose hash is `hash`. Call in
    /// *decreasing* `index` order: each occurrence goes to the front of its identifier's chain,
    /// so the chain ends up in increasing order without a tail pointer.
    @inlinable
    mutating func addOld(_ id: ID, hash: Int, at index: Int) {
        var slot = 0
        let occurrence = Int32(truncatingIfNeeded: index)
        let entry = find(id, hash: hash, slot: &slot)
        if entry < 0 {
            _ = insert(Entry(id: id, nextUnpaired: occurrence), hash: hash, slot: slot)
        } else {
            nextOccurrence[index] = entries[entry].nextUnpaired
            entries[entry].nextUnpaired = occurrence
            duplicates.insert(id)
        }
    }

    /// Pairs the next new occurrence of `id` with its first unpaired old occurrence; -1 if none.
    @inlinable
    mutating func pairNew(_ id: ID, hash: Int) -> Int32 {
        var slot = 0
        var entry = find(id, hash: hash, slot: &slot)
        if entry < 0 {
            entry = insert(Entry(id: id, nextUnpaired: -1), hash: hash, slot: slot)
        }
        if entries[entry].seenInNew { duplicates.insert(id) }
        entries[entry].seenInNew = true
        let old = entries[entry].nextUnpaired
        if old >= 0 { entries[entry].nextUnpaired = nextOccurrence[Int(old)] }
        return old
    }
}
