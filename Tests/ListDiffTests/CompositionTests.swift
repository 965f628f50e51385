import ListDiff
import ListTesting
import Testing

/// Chains of random snapshots: the changesets between them, composed into one, must take the
/// strict headless view from the first to the last without a violation or a stale cell, and map
/// rows the way identities say.
@MainActor
struct CompositionTests {
    nonisolated static let shapes = ChangeShape.allCases.filter { $0 != .duplicates && $0 != .identical }

    @Test("composed changesets reach the last state of a chain", arguments: shapes)
    func composedChainReachesTarget(shape: ChangeShape) throws {
        let seed = DiffPropertyTests.seed &+ 500 &+ UInt64(Self.shapes.firstIndex(of: shape) ?? 0)
        print("CompositionTests(\(shape)): seed \(seed)")
        var random = RandomSnapshots(seed: seed)
        for iteration in 0..<200 {
            var states = [random.pair(shape).old]
            for _ in 0..<Int.random(in: 2...5, using: &random.generator) {
                states.append(random.mutate(states[states.count - 1], shape == .emptyToFull || shape == .fullToEmpty ? .mixed : shape))
            }
            var composed = Changeset(from: states[0], to: states[1])
            for index in 2..<states.count {
                let next = Changeset(from: states[index - 1], to: states[index])
                composed = try #require(composed.composed(with: next))
            }
            let context = "seed \(seed), \(shape) #\(iteration), \(states.count) states"
            let first = states[0], last = states[states.count - 1]
            let dataSource = SnapshotDataSource(first)
            let view = HeadlessListView(dataSource: dataSource)
            view.layoutIfNeeded()
            do {
                try view.apply(composed, to: dataSource)
            } catch {
                Issue.record("\(error), \(context)")
                continue
            }
            #expect(dataSource.snapshot == last, "\(context)")
            #expect(view.staleCells().isEmpty, "\(context)")
            let mapping = PathMapping(composed.changes)
            for section in first.sections.indices {
                for item in first.sections[section].items.indices {
                    let path = ItemPath(section: section, item: item)
                    if let target = mapping.newPath(ofOld: path) {
                        #expect(last[target].id == first[path].id, "\(path) → \(target), \(context)")
                    }
                }
            }
        }
    }

    @Test("stages show, after each batch, what the view holds; only rows of sections reloaded last may wait", arguments: ChangeShape.allCases)
    func intermediateStatesMatchTheView(shape: ChangeShape) throws {
        let seed = DiffPropertyTests.seed &+ 600 &+ UInt64(ChangeShape.allCases.firstIndex(of: shape) ?? 0)
        print("CompositionTests.intermediateStates(\(shape)): seed \(seed)")
        var random = RandomSnapshots(seed: seed)
        for iteration in 0..<300 {
            let (old, new) = random.pair(shape)
            let changeset = Changeset(from: old, to: new)
            let dataSource = SnapshotDataSource(old)
            let view = HeadlessListView(dataSource: dataSource)
            view.layoutIfNeeded()
            let pendingSections = Set(changeset.stages.last?.changes.sectionReloads ?? [])
            // Rows bound for a section reloaded in the last stage wait for that reload.
            let pendingRows = Set(pendingSections.flatMap { new.sections[$0].items.map(\.id) })
            for (number, stage) in changeset.stages.enumerated() {
                try view.performBatchUpdates { () throws(BatchUpdateViolation) in
                    dataSource.snapshot = stage.snapshot
                    try view.apply(stage.changes)
                }
                let isLast = number == changeset.stages.count - 1
                for path in view.staleCells() {
                    let waits: Bool
                    if path.item < 0 {
                        waits = !pendingSections.isEmpty
                    } else {
                        waits = stage.snapshot.itemIfPresent(at: path).map { pendingRows.contains($0.id) } ?? false
                    }
                    #expect(!isLast && waits, "stale \(path) after stage \(number), seed \(seed), \(shape) #\(iteration)")
                }
            }
        }
    }
}
