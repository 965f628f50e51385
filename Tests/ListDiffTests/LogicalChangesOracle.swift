import ListDiff

/// The logical changes between two snapshots with unique identifiers, computed the slow and obvious
/// way (dictionaries and a quadratic longest increasing subsequence), to check the diff against.
struct LogicalChangesOracle {
    var sectionDeletes: Set<Int> = []
    var sectionInserts: Set<Int> = []
    var sectionReloads: Set<Int> = []
    var minimalSectionMoves = 0
    var itemDeletes: Set<ItemPath> = []
    var itemInserts: Set<ItemPath> = []
    var itemReloads: Set<ItemPath> = []
    var crossSectionMoveDestinations: Set<ItemPath> = []
    var minimalSameSectionMoves = 0

    init(old: Snapshot, new: Snapshot) {
        let oldSectionIndex = Dictionary(uniqueKeysWithValues: old.sections.enumerated().map { ($1.model.id, $0) })
        let newSectionIndex = Dictionary(uniqueKeysWithValues: new.sections.enumerated().map { ($1.model.id, $0) })
        var oldPath: [Int: ItemPath] = [:]
        var newPath: [Int: ItemPath] = [:]
        for (s, section) in old.sections.enumerated() {
            for (i, item) in section.items.enumerated() { oldPath[item.id] = ItemPath(section: s, item: i) }
        }
        for (s, section) in new.sections.enumerated() {
            for (i, item) in section.items.enumerated() { newPath[item.id] = ItemPath(section: s, item: i) }
        }
        for (s, section) in old.sections.enumerated() {
            guard let n = newSectionIndex[section.model.id] else { sectionDeletes.insert(s); continue }
            if new.sections[n].model != section.model { sectionReloads.insert(s) }
        }
        for (s, section) in new.sections.enumerated() where oldSectionIndex[section.model.id] == nil {
            sectionInserts.insert(s)
        }
        let survivingOrder = new.sections.compactMap { oldSectionIndex[$0.model.id] }
        minimalSectionMoves = survivingOrder.count - Self.longestIncreasingLength(survivingOrder)

        func isCarried(_ from: ItemPath, _ to: ItemPath) -> Bool {
            !sectionDeletes.contains(from.section) && !sectionInserts.contains(to.section)
        }
        for (id, from) in oldPath {
            guard let to = newPath[id], isCarried(from, to) else { itemDeletes.insert(from); continue }
            if old[from] != new[to] { itemReloads.insert(from) }
            if old.sections[from.section].model.id != new.sections[to.section].model.id {
                crossSectionMoveDestinations.insert(to)
            }
        }
        for (id, to) in newPath {
            guard let from = oldPath[id], isCarried(from, to) else { itemInserts.insert(to); continue }
        }
        for section in new.sections {
            guard let o = oldSectionIndex[section.model.id] else { continue }
            let stayed = section.items.compactMap { item -> Int? in
                guard let from = oldPath[item.id], from.section == o else { return nil }
                return from.item
            }
            minimalSameSectionMoves += stayed.count - Self.longestIncreasingLength(stayed)
        }
    }

    static func longestIncreasingLength(_ values: [Int]) -> Int {
        var best = [Int](repeating: 1, count: values.count)
        for i in values.indices {
            for j in 0..<i where values[j] < values[i] { best[i] = max(best[i], best[j] + 1) }
        }
        return best.max() ?? 0
    }
}
