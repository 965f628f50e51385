/// A hub's subscriptions, and the same subscriptions grouped as a commit is sent to them: by
/// window (one `changes` is made per distinct window), then by subscription number (one frame per
/// number, shared by every subscriber that uses it).
///
/// The grouping is kept current with every change, so it is never missing or stale and a commit
/// never regroups every subscriber: a hub whose subscribers come and go between commits pays
/// O(1) for each arrival or departure, not O(subscribers) at the next commit.
///
/// A value with no I/O: generic over the member so that it is tested with plain objects.
struct HubSubscriptions<Member: AnyObject> {
    /// One member's subscription.
    struct Entry {
        let subscriber: Member
        /// The client's number for the subscription.
        let sub: Int
        /// The positions the client asked for (not clamped: the list may grow into them).
        var window: Range<Int>
    }

    private var entries: [ObjectIdentifier: Entry] = [:]
    /// The members by window, then by subscription number, then by identity. Holds no empty
    /// bucket: every window in it is one some member asked for.
    private(set) var groups: [Range<Int>: [Int: [ObjectIdentifier: Member]]] = [:]

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    /// Every subscription, in no particular order.
    var all: Dictionary<ObjectIdentifier, Entry>.Values { entries.values }

    subscript(_ key: ObjectIdentifier) -> Entry? { entries[key] }

    func contains(_ key: ObjectIdentifier) -> Bool { entries[key] != nil }

    /// Adds `subscriber`, or moves it to `window` (and `sub`) when it is there.
    ///
    /// - Complexity: O(1) amortized.
    mutating func set(_ subscriber: Member, sub: Int, window: Range<Int>) {
        let key = ObjectIdentifier(subscriber)
        if let old = entries[key] { ungroup(key, old) }
        let entry = Entry(subscriber: subscriber, sub: sub, window: window)
        entries[key] = entry
        groups[window, default: [:]][sub, default: [:]][key] = subscriber
    }

    /// Removes the subscription of `key`, returning it.
    ///
    /// - Complexity: O(1) amortized.
    @discardableResult
    mutating func remove(_ key: ObjectIdentifier) -> Entry? {
        guard let old = entries.removeValue(forKey: key) else { return nil }
        ungroup(key, old)
        return old
    }

    /// Removes every subscription, returning them.
    mutating func removeAll() -> [Entry] {
        let all = Array(entries.values)
        entries = [:]
        groups = [:]
        return all
    }

    private mutating func ungroup(_ key: ObjectIdentifier, _ entry: Entry) {
        // Each bucket is taken out before it changes, so it is changed in place, not copied.
        guard var bySub = groups.removeValue(forKey: entry.window) else { return }
        if var members = bySub.removeValue(forKey: entry.sub) {
            members[key] = nil
            if !members.isEmpty { bySub[entry.sub] = members }
        }
        if !bySub.isEmpty { groups[entry.window] = bySub }
    }
}
