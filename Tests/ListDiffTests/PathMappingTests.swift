import ListDiff
import ListTesting
import Testing

/// `PathMapping` against two independent oracles: identities (a logical transition maps each row
/// to where the same identity is after it) and the headless view (one stage's batch moves cells
/// exactly where the mapping says).
@MainActor
struct PathMappingTests {
    nonisolated static let shapes = ChangeShape.allCases.filter { $0 != .duplicates }

    @Test("the logical changes map every surviving row to its identity's new place", arguments: shapes)
    func logicalMappingFollowsIdentity(shape: ChangeShape) {
        let seed = DiffPropertyTests.seed &+ 300 &+ UInt64(Self.shapes.firstIndex(of: shape) ?? 0)
        print("PathMappingTests.logicalMappingFollowsIdentity(\(shape)): seed \(seed)")
        var random = RandomSnapshots(seed: seed)
        for iteration in 0..<300 {
            let (old, new) = random.pair(shape)
            let changes = Changeset(from: old, to: new).changes
            let mapping = PathMapping(changes)
            let context = "seed \(seed), \(shape) #\(iteration)"
            let newPaths = Dictionary(uniqueKeysWithValues: paths(of: new).map { (new[$0].id, $0) })
            let oldPaths = Dictionary(uniqueKeysWithValues: paths(of: old).map { (old[$0].id, $0) })
            let deleted = Set(changes.itemDeletes), inserted = Set(changes.itemInserts)
            for path in paths(of: old) {
                let expected = deleted.contains(path) ? nil : newPaths[old[path].id]
                #expect(mapping.newPath(ofOld: path) == expected, "\(path), \(context)")
            }
            for path in paths(of: new) {
                let expected = inserted.contains(path) ? nil : oldPaths[new[path].id]
                #expect(mapping.oldPath(ofNew: path) == expected, "\(path), \(context)")
            }
        }
    }

    @Test("each stage's batch moves the view's cells where the mapping says", arguments: shapes)
    func stageMappingFollowsCells(shape: ChangeShape) throws {
        let seed = DiffPropertyTests.seed &+ 400 &+ UInt64(Self.shapes.firstIndex(of: shape) ?? 0)
        print("PathMappingTests.stageMappingFollowsCells(\(shape)): seed \(seed)")
        var random = RandomSnapshots(seed: seed)
        for iteration in 0..<200 {
            let (old, new) = random.pair(shape)
            let changeset = Changeset(from: old, to: new)
            let dataSource = SnapshotDataSource(old)
            let view = HeadlessListView(dataSource: dataSource)
            view.layoutIfNeeded()
            var current = old
            for (number, stage) in changeset.stages.enumerated() {
                let context = "seed \(seed), \(shape) #\(iteration), stage \(number)"
                // Which cell (by the identity it showed) sits where before the batch.
                var cellBefore: [Int: ItemPath] = [:]
                for path in paths(of: current) { if let cell = view.cellContent(at: path) { cellBefore[cell.id] = path } }
                try view.performBatchUpdates { () throws(BatchUpdateViolation) in
                    dataSource.snapshot = stage.snapshot
                    try view.apply(stage.changes)
                }
                let mapping = PathMapping(stage.changes)
                let reloaded = Set(stage.changes.itemReloads)
                for path in paths(of: stage.snapshot) {
                    guard let cell = view.cellContent(at: path) else { continue }
                    let origin = mapping.oldPath(ofNew: path)
                    if let origin, !reloaded.contains(origin), cellBefore[cell.id] != nil {
                        #expect(cellBefore[cell.id] == origin, "\(path), \(context)")
                    }
                    if let origin { #expect(mapping.newPath(ofOld: origin) == path, "round trip \(path), \(context)") }
                }
                current = stage.snapshot
            }
        }
    }

    @Test("an insert above pushes a row down; a delete above pulls it up; a move is followed")
    func namedCases() {
        var changes = ListChanges()
        changes.itemInserts = [ItemPath(section: 0, item: 0)]
        changes.itemDeletes = [ItemPath(section: 0, item: 2)]
        changes.itemMoves = [Move(from: ItemPath(section: 0, item: 4), to: ItemPath(section: 1, item: 0))]
        let mapping = PathMapping(changes)
        #expect(mapping.newPath(ofOld: ItemPath(section: 0, item: 1)) == ItemPath(section: 0, item: 2))
        #expect(mapping.newPath(ofOld: ItemPath(section: 0, item: 2)) == nil)
        #expect(mapping.newPath(ofOld: ItemPath(section: 0, item: 3)) == ItemPath(section: 0, item: 3))
        #expect(mapping.newPath(ofOld: ItemPath(section: 0, item: 5)) == ItemPath(section: 0, item: 4))
        #expect(mapping.newPath(ofOld: ItemPath(section: 0, item: 4)) == ItemPath(section: 1, item: 0))
        #expect(mapping.newPath(ofOld: ItemPath(section: 1, item: 0)) == ItemPath(section: 1, item: 1))
        #expect(mapping.oldPath(ofNew: ItemPath(section: 0, item: 0)) == nil)
        #expect(mapping.oldPath(ofNew: ItemPath(section: 1, item: 1)) == ItemPath(section: 1, item: 0))
    }

    func paths(of snapshot: Snapshot) -> [ItemPath] {
        snapshot.sections.indices.flatMap { section in
            snapshot.sections[section].items.indices.map { ItemPath(section: section, item: $0) }
        }
    }
}
