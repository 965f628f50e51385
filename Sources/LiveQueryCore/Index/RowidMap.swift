/// rowid → leaf id, for finding a changed row's entry: an open-addressing table of 12 bytes a
/// slot, at most 85% full (about 14 bytes a row), where a `Dictionary` of the same pairs takes
/// about 32.
///
/// Linear probing with backward-shift deletion (no tombstones); slots are picked by multiplying
/// the mixed key into the table size, so the capacity need not be a power of two. An empty slot
/// holds `Int64.min`; the one row that may have that rowid is kept aside.
struct RowidMap: Sendable {
    private static let empty = Int64.min
    private var keys: [Int64]
    private var values: [UInt32]
    private var minimumKeyValue: UInt32?
    private(set) var count = 0

    /// The table's size, which growth doubles.
    var slotCount: Int { keys.count }

    init(capacity: Int = 0) {
        // Room for `capacity` keys at the 85% load the table grows at.
        let slots = max(16, capacity * 20 / 17 + 2)
        keys = [Int64](repeating: Self.empty, count: slots)
        values = [UInt32](repeating: 0, count: slots)
    }

    @inline(__always)
    private func home(_ key: Int64) -> Int {
        var x = UInt64(bitPattern: key)
        x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
        x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
        x ^= x >> 31
        return Int(truncatingIfNeeded: x.multipliedFullWidth(by: UInt64(keys.count)).high)
    }

    subscript(key: Int64) -> UInt32? {
        get {
            guard key != Self.empty else { return minimumKeyValue }
            var slot = home(key)
            while keys[slot] != Self.empty {
                if keys[slot] == key { return values[slot] }
                slot += 1
                if slot == keys.count { slot = 0 }
            }
            return nil
        }
        set {
            guard key != Self.empty else {
                count += (newValue != nil ? 1 : 0) - (minimumKeyValue != nil ? 1 : 0)
                minimumKeyValue = newValue
                return
            }
            if let newValue { insert(key, newValue) } else { remove(key) }
        }
    }

    private mutating func insert(_ key: Int64, _ value: UInt32) {
        var slot = home(key)
        while keys[slot] != Self.empty {
            if keys[slot] == key {
                values[slot] = value   // an update: no growth (a leaf split moves 128 rows this way)
                return
            }
            slot += 1
            if slot == keys.count { slot = 0 }
        }
        if (count + 1) * 20 > keys.count * 17 {
            grow()
            slot = home(key)
            while keys[slot] != Self.empty {
                slot += 1
                if slot == keys.count { slot = 0 }
            }
        }
        keys[slot] = key
        values[slot] = value
        count += 1
    }

    private mutating func remove(_ key: Int64) {
        var slot = home(key)
        while keys[slot] != Self.empty {
            if keys[slot] == key { break }
            slot += 1
            if slot == keys.count { slot = 0 }
        }
        guard keys[slot] != Self.empty else { return }
        // Backward shift: pull later members of the probe run into the hole when their home
        // slot is not between the hole and where they sit.
        var hole = slot
        var next = slot
        while true {
            next += 1
            if next == keys.count { next = 0 }
            guard keys[next] != Self.empty else { break }
            let wanted = home(keys[next])
            let between = hole <= next ? (wanted > hole && wanted <= next) : (wanted > hole || wanted <= next)
            if !between {
                keys[hole] = keys[next]
                values[hole] = values[next]
                hole = next
            }
        }
        keys[hole] = Self.empty
        count -= 1
    }

    private mutating func grow() {
        let oldKeys = keys, oldValues = values, aside = minimumKeyValue
        self = RowidMap(capacity: max(16, count * 2))
        for slot in oldKeys.indices where oldKeys[slot] != Self.empty { insert(oldKeys[slot], oldValues[slot]) }
        minimumKeyValue = aside
        if aside != nil { count += 1 }
    }
}
