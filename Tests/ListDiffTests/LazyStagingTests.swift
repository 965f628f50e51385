@testable import ListDiff
import ListTesting
import Testing

/// Stages are made where they are read: making a changeset and reading what changed stages
/// nothing and reads no row; the first read of `stages`, by any copy, stages once for all copies.
struct LazyStagingTests {
    /// Two sections; the new state moves, deletes, inserts and reloads rows and reloads a section,
    /// so that the changeset has several stages.
    static let old = Snapshot(sections: [
        SnapshotSection(Header(id: 100, version: 0), items: (1...6).map { Row(id: $0, version: 0) }),
        SnapshotSection(Header(id: 200, version: 0), items: (7...9).map { Row(id: $0, version: 0) }),
    ])
    static let new = Snapshot(sections: [
        SnapshotSection(Header(id: 100, version: 0), items: [6, 1, 3, 4, 10].map { Row(id: $0, version: $0 == 3 ? 1 : 0) }),
        SnapshotSection(Header(id: 200, version: 1), items: (7...9).map { Row(id: $0, version: 0) }),
    ])

    @Test("a changeset made from logical changes stages nothing and reads no row until its stages are read")
    func logicalChangesStageOnFirstRead() {
        let counter = ReadCounter()
        let changes = Changeset(from: Self.old, to: Self.new).changes
        let changeset = Changeset(changes: changes, from: CountingList(base: Self.old, counter: counter),
                                  to: CountingList(base: Self.new, counter: counter))
        #expect(changeset.changes == changes)
        #expect(!changeset.isEmpty)
        #expect(changeset.duplicates.isEmpty)
        #expect(changeset.before?.stateID == nil && changeset.after?.stateID == nil)
        #expect(!changeset.storage.isStaged, "reading the changes staged them")
        #expect(counter.reads == 0)

        let copy = changeset
        let first = copy.stages
        #expect(changeset.storage.isStaged, "a copy's stages are the changeset's")
        let second = changeset.stages
        #expect(first.count > 1)
        #expect(Self.shareStorage(first, second), "the stages were made twice")
        #expect(first.map(\.changes) == Changeset.stage(changes, from: changeset.storage.before, to: changeset.storage.after).map(\.changes))
        #expect(counter.reads == 0, "staging read rows; its states are views, read on demand")
    }

    @Test("the diff's caller who reads only the changes pays for no staging")
    func diffDoesNotStage() {
        let changeset = Changeset(from: Self.old, to: Self.new)
        #expect(!changeset.changes.isEmpty && !changeset.isEmpty)
        #expect(!changeset.storage.isStaged)
        #expect(changeset.stages.last?.snapshot == Self.new)
    }

    @Test("an empty changeset says so from its changes, without staging")
    func emptyWithoutStaging() {
        let changeset = Changeset(from: Self.old, to: Self.old)
        #expect(changeset.isEmpty)
        #expect(!changeset.storage.isStaged)
        #expect(changeset.stages.isEmpty)
    }

    @Test("copies read on many threads at once get the one staging", .timeLimit(.minutes(1)))
    func concurrentReadersShareOneStaging() async {
        let changeset = Changeset(from: Self.old, to: Self.new)
        let addresses = await withTaskGroup(of: UInt?.self) { group in
            for _ in 0..<8 {
                let copy = changeset
                group.addTask { copy.stages.withUnsafeBufferPointer { $0.baseAddress.map { UInt(bitPattern: $0) } } }
            }
            var addresses: [UInt?] = []
            for await address in group { addresses.append(address) }
            return addresses
        }
        #expect(addresses.count == 8)
        #expect(Set(addresses).count == 1 && addresses.allSatisfy { $0 != nil }, "readers got stages of different stagings")
    }

    /// Whether two arrays share one buffer: the same stages, not an equal second staging.
    static func shareStorage(_ lhs: [ChangesetStage<Header, Row>], _ rhs: [ChangesetStage<Header, Row>]) -> Bool {
        lhs.withUnsafeBufferPointer { lhs in rhs.withUnsafeBufferPointer { rhs in lhs.baseAddress == rhs.baseAddress } }
    }
}
