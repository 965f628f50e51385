/// rowid → leaf id, for finding a changed row's entry: an open-addressing table of 12 bytes a
/// slot (about 15 bytes a row), where a `Dictionary` of the same pairs takes about 32.
///
/// Linear probing with backward-shift deletion (no tombstones); slots are picked by multiplying
/// the mixed key into the table size, so the capacity need not be a power of two and stays
/// within 1.25× the count.
struct _RowidMap: Sendable {
    private var keys: [Int64]
    private var values: [UInt32]
    private var occupied: [Bool]
    private(set) var count = 0

    init(capacity: Int = 0) {
        let slots = max(16, capacity + capacity / 4 + 1)
        keys = [Int64](repeating: 0, count: slots)
        values = [UInt32](repeating: 0, count: slots)
        occupied = [Bool](repeating: false, count: slots)
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
            var slot = home(key)
            while occupied[slot] {
                if keys[slot] == key { return values[slot] }
                slot += 1
                if slot == keys.count { slot = 0 }
            }
            return nil
        }
        set {
            if let newValue { insert(key, newValue) } else { remove(key) }
        }
    }

    private mutating func insert(_ key: Int64, _ value: UInt32) {
        if (count + 1) * 5 > keys.count * 4 { grow() }
        var slot = home(key)
        while occupied[slot] {
            if keys[slot] == key {
                values[slot] = value
                return
            }
            slot += 1
            if slot == keys.count { slot = 0 }
        }
        occupied[slot] = true
        keys[slot] = key
        values[slot] = value
        count += 1
    }

    private mutating func remove(_ key: Int64) {
        var slot = home(key)
        while occupied[slot] {
            if keys[slot] == key { break }
            slot += 1
            if slot == keys.count { slot = 0 }
        }
        guard occupied[slot] else { return }
        // Backward shift: pull later members of the probe run into the hole when their home
        // slot is not between the hole and where they sit.
        var hole = slot
        var next = slot
        while true {
            next += 1
            if next == keys.count { next = 0 }
            guard occupied[next] else { break }
            let wanted = home(keys[next])
            let between = hole <= next ? (wanted > hole && wanted <= next) : (wanted > hole || wanted <= next)
            if !between {
                keys[hole] = keys[next]
                values[hole] = values[next]
                hole = next
            }
        }
        occupied[hole] = false
        count -= 1
    }

    private mutating func grow() {
        let oldKeys = keys, oldValues = values, oldOccupied = occupied
        self = _RowidMap(capacity: max(16, count * 2))
        for slot in oldKeys.indices where oldOccupied[slot] { insert(oldKeys[slot], oldValues[slot]) }
    }
}
