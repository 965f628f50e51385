/// The recent commits the engine took from the stream, by the tables they changed: where a query
/// that opens finds the last commit that touched its tables, which its first result then holds
/// from — the same position on every server over the database, so a client that saw the list on
/// another server resumes here. A value, tested without a database.
struct CommitLog: Sendable {
    private struct Entry: Sendable {
        var end: UInt64
        var relations: Set<UInt32>
    }

    private var entries: [Entry] = []
    private var head = 0
    /// Every commit that ends after it (and was taken) is in the log.
    private(set) var coveredFrom: UInt64 = 0
    let capacity: Int

    init(capacity: Int = 65_536) { self.capacity = max(1, capacity) }

    /// The stream (re)started at `position` without the commits before it: the log starts over.
    mutating func restart(at position: UInt64) {
        entries = []
        head = 0
        coveredFrom = position
    }

    /// A commit taken from the stream.
    mutating func append(end: UInt64, relations: Set<UInt32>) {
        entries.append(Entry(end: end, relations: relations))
        if entries.count - head > capacity {
            coveredFrom = entries[head].end
            head += 1
            if head >= capacity {
                entries.removeFirst(head)
                head = 0
            }
        }
    }

    /// The end of the last commit at or before `position` that touched one of `relations`; when
    /// none did since the log's start, its start.
    /// - Complexity: O(c) for the c commits after it.
    func lastTouch(of relations: Set<UInt32>, atOrBefore position: UInt64) -> UInt64 {
        var index = entries.count - 1
        while index >= head {
            let entry = entries[index]
            if entry.end <= position, !entry.relations.isDisjoint(with: relations) { return entry.end }
            index -= 1
        }
        return min(coveredFrom, position)
    }
}
