import ListDiff
import ListTesting

typealias Row = VersionedItem<Int, Int>
typealias Header = VersionedItem<Int, Int>
typealias Snapshot = ListSnapshot<Header, Row>

/// The shapes of change the property tests draw from, so that rare cases are not left to chance.
enum ChangeShape: CaseIterable {
    case mixed, emptyToFull, fullToEmpty, allItemsDeleted, heavyShuffle, crossSectionMoves
    case sectionMovesWithItemChanges, contentOnly, duplicates, identical, sectionChurn
}

/// Random pairs of sectioned snapshots (old, new) of a given shape.
struct RandomSnapshots {
    var generator: SeededRandomNumberGenerator
    private var nextID = 0

    init(seed: UInt64) { generator = SeededRandomNumberGenerator(seed: seed) }

    private mutating func freshID() -> Int {
        nextID += 1
        return nextID
    }

    private mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &generator) < probability
    }

    mutating func snapshot(maxSections: Int = 6, maxItems: Int = 12) -> Snapshot {
        let sectionCount = Int.random(in: 0...maxSections, using: &generator)
        return Snapshot(sections: (0..<sectionCount).map { _ in
            let items = (0..<Int.random(in: 0...maxItems, using: &generator)).map { _ in Row(id: freshID(), version: 0) }
            return SnapshotSection(Header(id: freshID(), version: 0), items: items)
        })
    }

    mutating func pair(_ shape: ChangeShape) -> (old: Snapshot, new: Snapshot) {
        switch shape {
        case .emptyToFull: return (Snapshot(), snapshot())
        case .fullToEmpty: return (snapshot(), Snapshot())
        case .allItemsDeleted:
            let old = snapshot()
            return (old, Snapshot(sections: old.sections.map { SnapshotSection($0.model, items: []) }))
        case .identical:
            let old = snapshot()
            return (old, old)
        case .duplicates:
            var old = snapshot()
            if chance(0.5) { old = injectDuplicates(old) }
            return (old, mutate(old, .duplicates))
        default:
            let old = snapshot()
            return (old, mutate(old, shape))
        }
    }

    /// Derives a new snapshot from `old` with changes whose mix depends on `shape`.
    mutating func mutate(_ old: Snapshot, _ shape: ChangeShape) -> Snapshot {
        var sections = old.sections
        let churn = shape == .mixed || shape == .sectionChurn
        let sectionMoves = churn || shape == .sectionMovesWithItemChanges
        let itemChurn = shape == .mixed || shape == .sectionMovesWithItemChanges || shape == .heavyShuffle
            || shape == .crossSectionMoves || shape == .duplicates
        if churn {
            sections.removeAll { _ in chance(0.25) }
            for _ in 0..<Int.random(in: 0...2, using: &generator) {
                let items = (0..<Int.random(in: 0...5, using: &generator)).map { _ in Row(id: freshID(), version: 0) }
                sections.insert(SnapshotSection(Header(id: freshID(), version: 0), items: items),
                                at: Int.random(in: 0...sections.count, using: &generator))
            }
        }
        if sectionMoves && sections.count > 1 {
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let from = Int.random(in: 0..<sections.count, using: &generator)
                let section = sections.remove(at: from)
                sections.insert(section, at: Int.random(in: 0...sections.count, using: &generator))
            }
        }
        if shape != .contentOnly && shape != .crossSectionMoves {
            for index in sections.indices where chance(0.2) { sections[index].model.version += 1 }
        }
        if itemChurn {
            for index in sections.indices {
                sections[index].items.removeAll { _ in chance(shape == .heavyShuffle ? 0.1 : 0.2) }
                for _ in 0..<Int.random(in: 0...3, using: &generator) {
                    sections[index].items.insert(Row(id: freshID(), version: 0),
                                                 at: Int.random(in: 0...sections[index].items.count, using: &generator))
                }
                if shape == .heavyShuffle { sections[index].items.shuffle(using: &generator) }
                else if sections[index].items.count > 1 && chance(0.5) {
                    let from = Int.random(in: 0..<sections[index].items.count, using: &generator)
                    let item = sections[index].items.remove(at: from)
                    sections[index].items.insert(item, at: Int.random(in: 0...sections[index].items.count, using: &generator))
                }
            }
        }
        if (shape == .mixed || shape == .crossSectionMoves || shape == .sectionMovesWithItemChanges) && sections.count > 1 {
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                let from = Int.random(in: 0..<sections.count, using: &generator)
                guard !sections[from].items.isEmpty else { continue }
                let item = sections[from].items.remove(at: Int.random(in: 0..<sections[from].items.count, using: &generator))
                let to = Int.random(in: 0..<sections.count, using: &generator)
                sections[to].items.insert(item, at: Int.random(in: 0...sections[to].items.count, using: &generator))
            }
        }
        for section in sections.indices {
            for item in sections[section].items.indices where chance(shape == .contentOnly ? 0.4 : 0.15) {
                sections[section].items[item].version += 1
            }
        }
        if shape == .duplicates {
            return injectDuplicates(Snapshot(sections: sections))
        }
        return Snapshot(sections: sections)
    }

    /// Copies a few items and possibly a section identifier, as a buggy data source would.
    mutating func injectDuplicates(_ snapshot: Snapshot) -> Snapshot {
        var sections = snapshot.sections
        let all = sections.flatMap(\.items)
        for _ in 0..<Int.random(in: 1...3, using: &generator) where !all.isEmpty && !sections.isEmpty {
            let target = Int.random(in: 0..<sections.count, using: &generator)
            let copy = all[Int.random(in: 0..<all.count, using: &generator)]
            sections[target].items.insert(copy, at: Int.random(in: 0...sections[target].items.count, using: &generator))
        }
        if sections.count > 1 && chance(0.3) {
            sections.append(SnapshotSection(sections[0].model, items: []))
        }
        return Snapshot(sections: sections)
    }
}
