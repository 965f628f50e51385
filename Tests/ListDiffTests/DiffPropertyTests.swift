import ListDiff
import ListTesting
import Testing

/// Random snapshot pairs, checked against independent oracles: the headless list view (every stage
/// must apply without a violation and leave exactly the target on display) and a slow, obviously
/// correct recomputation of the logical changes.
@MainActor
struct DiffPropertyTests {
    static let seed: UInt64 = 0x5EED_2026_1122
    static let pairsPerShape = 400

    @Test("stages apply to the headless view without a violation and reach the target", arguments: ChangeShape.allCases)
    func stagesReachTarget(shape: ChangeShape) {
        let seed = Self.seed &+ UInt64(ChangeShape.allCases.firstIndex(of: shape) ?? 0)
        print("DiffPropertyTests.stagesReachTarget(\(shape)): seed \(seed)")
        var random = RandomSnapshots(seed: seed)
        for iteration in 0..<Self.pairsPerShape {
            let (old, new) = random.pair(shape)
            let changeset = Changeset(from: old, to: new)
            let context = "seed \(seed), \(shape) #\(iteration)"
            #expect(changeset.stages.allSatisfy { !$0.changes.isEmpty }, "empty stage, \(context)")
            if old == new { #expect(changeset.stages.isEmpty, "identical snapshots gave stages, \(context)") }
            if let last = changeset.stages.last { #expect(last.snapshot == new, "last stage is not the target, \(context)") }

            let dataSource = SnapshotDataSource(old)
            let view = HeadlessListView(dataSource: dataSource)
            view.layoutIfNeeded()
            do {
                try view.apply(changeset, to: dataSource)
            } catch {
                Issue.record("\(error), \(context)\nold: \(old)\nnew: \(new)")
                continue
            }
            #expect(dataSource.snapshot == new, "\(context)")
            let stale = view.staleCells()
            #expect(stale.isEmpty, "stale or misplaced cells \(stale), \(context)")
            #expect(view.warnings.isEmpty, "\(view.warnings), \(context)")
        }
    }

    @Test("logical changes partition both states, moves are minimal, every changed row is reloaded", arguments: ChangeShape.allCases.filter { $0 != .duplicates })
    func logicalChangesMatchOracle(shape: ChangeShape) {
        let seed = Self.seed &+ 100 &+ UInt64(ChangeShape.allCases.firstIndex(of: shape) ?? 0)
        print("DiffPropertyTests.logicalChangesMatchOracle(\(shape)): seed \(seed)")
        var random = RandomSnapshots(seed: seed)
        for iteration in 0..<Self.pairsPerShape {
            let (old, new) = random.pair(shape)
            let expected = LogicalChangesOracle(old: old, new: new)
            let changes = Changeset(from: old, to: new).changes
            let context = "seed \(seed), \(shape) #\(iteration)"
            #expect(Set(changes.sectionDeletes) == expected.sectionDeletes, "\(context)")
            #expect(Set(changes.sectionInserts) == expected.sectionInserts, "\(context)")
            #expect(Set(changes.sectionReloads) == expected.sectionReloads, "\(context)")
            #expect(changes.sectionMoves.count == expected.minimalSectionMoves, "\(context)")
            #expect(Set(changes.itemDeletes) == expected.itemDeletes, "\(context)")
            #expect(Set(changes.itemInserts) == expected.itemInserts, "\(context)")
            #expect(Set(changes.itemReloads) == expected.itemReloads, "\(context)")
            for move in changes.itemMoves {
                #expect(old[move.from].id == new[move.to].id, "move pairs different rows, \(context)")
            }
            let crossSection = changes.itemMoves.filter {
                old.sections[$0.from.section].model.id != new.sections[$0.to.section].model.id
            }
            #expect(Set(crossSection.map(\.to)) == expected.crossSectionMoveDestinations, "\(context)")
            #expect(changes.itemMoves.count - crossSection.count == expected.minimalSameSectionMoves, "\(context)")
        }
    }

    @Test("duplicate identifiers are reported and still give consistent batches")
    func duplicatesAreReported() throws {
        let row = Row(id: 1, version: 0)
        let old = Snapshot(sections: [SnapshotSection(Header(id: 1), items: [row, Row(id: 2), row])])
        let new = Snapshot(sections: [
            SnapshotSection(Header(id: 1), items: [Row(id: 2), row, row, row]),
            SnapshotSection(Header(id: 1), items: []),
        ])
        let changeset = Changeset(from: old, to: new)
        #expect(changeset.duplicates.itemIDs == [1])
        #expect(changeset.duplicates.sectionIDs == [1])
        let dataSource = SnapshotDataSource(old)
        let view = HeadlessListView(dataSource: dataSource)
        try view.apply(changeset, to: dataSource)
        #expect(view.staleCells().isEmpty)
        #expect(Changeset(from: new, to: new).isEmpty)
    }
}

/// A row keyed by a string: exercises the standard `Hasher` path of the identity table (integer
/// identifiers take the byte-hash path).
private struct NamedRow: ListElement, Hashable {
    var id: String
    var version: Int
}

private struct NamedHeader: ListElement, Hashable {
    var id: String
    var version: Int
}

@MainActor
struct DiffHashingPathTests {
    private static func named(_ snapshot: Snapshot) -> ListSnapshot<NamedHeader, NamedRow> {
        ListSnapshot(sections: snapshot.sections.map { section in
            SnapshotSection(NamedHeader(id: "s\(section.model.id)", version: section.model.version),
                            items: section.items.map { NamedRow(id: "r\($0.id)", version: $0.version) })
        })
    }

    @Test("string identifiers (standard hashing) give the same changes as integer identifiers (byte hashing)", arguments: ChangeShape.allCases)
    func hashingPathsAgree(shape: ChangeShape) {
        let seed = DiffPropertyTests.seed &+ 200 &+ UInt64(ChangeShape.allCases.firstIndex(of: shape) ?? 0)
        print("DiffHashingPathTests(\(shape)): seed \(seed)")
        var random = RandomSnapshots(seed: seed)
        for iteration in 0..<200 {
            let (old, new) = random.pair(shape)
            let byBytes = Changeset(from: old, to: new)
            let byHasher = Changeset(from: Self.named(old), to: Self.named(new))
            #expect(byBytes.changes == byHasher.changes, "seed \(seed), \(shape) #\(iteration)")
            #expect(byBytes.stages.map(\.changes) == byHasher.stages.map(\.changes), "seed \(seed), \(shape) #\(iteration)")
            #expect(byBytes.duplicates.itemIDs.count == byHasher.duplicates.itemIDs.count, "seed \(seed), \(shape) #\(iteration)")
        }
    }
}
