import Testing
@testable import LiveListServer

/// The changesets a live query keeps for resuming clients, as a value: what it keeps, what it
/// drops, and what each change tells the server's gauge.
struct ResumeBufferValueTests {
    struct Entry: Weighed, Equatable {
        var name: String
        var bytes: Int
    }

    @Test("the oldest go past the count or the byte limit, and each change says what the gauge adds")
    func limits() {
        var buffer = ResumeBuffer<Entry>(maximumCount: 3, maximumBytes: 100)
        #expect(buffer.keep(Entry(name: "a", bytes: 10)) == .init(changesets: 1, bytes: 10))
        #expect(buffer.keep(Entry(name: "b", bytes: 20)) == .init(changesets: 1, bytes: 20))
        #expect(buffer.keep(Entry(name: "c", bytes: 30)) == .init(changesets: 1, bytes: 30))
        // A fourth: the count limit drops the oldest.
        #expect(buffer.keep(Entry(name: "d", bytes: 5)) == .init(changesets: 0, bytes: 5 - 10))
        #expect(buffer.entries.map(\.name) == ["b", "c", "d"])
        // Past the byte limit: as many of the oldest as it takes.
        #expect(buffer.keep(Entry(name: "e", bytes: 80)) == .init(changesets: 1 - 2, bytes: 80 - 50))
        #expect(buffer.entries.map(\.name) == ["d", "e"])
        #expect(buffer.bytes == 85)
    }

    @Test("an entry larger than the byte limit is not kept, and takes the others with it")
    func tooLarge() {
        var buffer = ResumeBuffer<Entry>(maximumCount: 10, maximumBytes: 100)
        _ = buffer.keep(Entry(name: "a", bytes: 40))
        #expect(buffer.keep(Entry(name: "huge", bytes: 101)) == .init(changesets: 1 - 2, bytes: 101 - 141))
        #expect(buffer.entries.isEmpty)
        #expect(buffer.bytes == 0)
    }

    @Test("removing everything tells the gauge to take back what was kept")
    func removeAll() {
        var buffer = ResumeBuffer<Entry>(maximumCount: 10, maximumBytes: 100)
        _ = buffer.keep(Entry(name: "a", bytes: 40))
        _ = buffer.keep(Entry(name: "b", bytes: 2))
        #expect(buffer.removeAll() == .init(changesets: -2, bytes: -42))
        #expect(buffer.entries.isEmpty && buffer.bytes == 0)
    }
}
