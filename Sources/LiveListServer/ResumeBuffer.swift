/// What a kept changeset costs.
protocol Weighed {
    /// Its bytes.
    var bytes: Int { get }
}

/// The changesets a live query keeps for clients that resume, oldest first, within a count and a
/// byte limit: a value, whose every change says what the server's gauge must add (events in,
/// gauge deltas out). An entry larger than the byte limit is not kept: a client behind it gets a
/// reset.
struct ResumeBuffer<Entry: Weighed> {
    /// What the server's count of kept changesets and bytes must add.
    struct Delta: Equatable {
        var changesets: Int
        var bytes: Int
    }

    /// The changesets kept, oldest first.
    private(set) var entries: [Entry] = []
    /// Their bytes.
    private(set) var bytes = 0
    /// At most this many changesets…
    let maximumCount: Int
    /// …and this many bytes.
    let maximumBytes: Int

    init(maximumCount: Int, maximumBytes: Int) {
        self.maximumCount = maximumCount
        self.maximumBytes = maximumBytes
    }

    /// Keeps `entry`, dropping the oldest entries past the limits.
    /// - Complexity: O(d) for d entries dropped, amortized.
    mutating func keep(_ entry: Entry) -> Delta {
        entries.append(entry)
        bytes += entry.bytes
        var dropped = 0, droppedBytes = 0
        while dropped < entries.count, entries.count - dropped > maximumCount || bytes > maximumBytes {
            bytes -= entries[dropped].bytes
            droppedBytes += entries[dropped].bytes
            dropped += 1
        }
        if dropped > 0 { entries.removeFirst(dropped) }
        return Delta(changesets: 1 - dropped, bytes: entry.bytes - droppedBytes)
    }

    /// Drops every entry (the live query ended, or started over).
    mutating func removeAll() -> Delta {
        defer {
            entries = []
            bytes = 0
        }
        return Delta(changesets: -entries.count, bytes: -bytes)
    }
}
