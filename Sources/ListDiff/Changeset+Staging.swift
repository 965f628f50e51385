/// The one place that encodes UIKit's safe batch order. Every producer of changesets — the diff,
/// a live query, the composition of queued changesets — hands its logical changes here.
///
/// Why five stages: UIKit rejects a reload and a move of the same item, a delete and a reload of
/// the same path, and item operations inside a section that is moved or reloaded in the same
/// batch. The safe order (docs/UIKIT-BATCH-RULES.md §2) is: (a) item reloads at old paths, (b) section
/// and item deletes, (c) section inserts and moves, (d) item inserts and moves, (e) section
/// reloads. Each non-empty stage is one batch with its own intermediate state.
extension Changeset {
    /// A changeset for `changes`, the transition from `before` to `after`, to be staged into
    /// UIKit-safe batches when its ``stages`` are first read.
    ///
    /// `changes` must describe the transition as ``ListChanges`` documents it (and as
    /// ``PathMapping`` reads it): rows of deleted and inserted sections are listed as deleted and
    /// inserted, moves connect surviving sections only, reloads name old paths of rows that stay,
    /// and rows not named keep their relative order.
    ///
    /// The intermediate states are views over `before` and `after`, never copies: reading a row of
    /// an intermediate state costs O(log c) for c changes, and the last stage's state is `after`
    /// itself.
    ///
    /// - Complexity: O(1); neither list is read. Reading ``stages`` the first time costs
    ///   O(c log c).
    public init(
        changes: ListChanges,
        from before: some SectionedList<SectionModel, Item>,
        to after: some SectionedList<SectionModel, Item>,
        duplicates: DuplicateReport<SectionModel.ID, Item.ID> = DuplicateReport()
    ) {
        storage = Storage(changes: changes, before: AnySectionedList(before), after: AnySectionedList(after),
                           duplicates: duplicates)
    }

    /// Stages `changes`, the transition from `before` to `after`, into UIKit-safe batches: the
    /// one stager, which ``stages`` runs on its first read.
    static func stage(
        _ changes: ListChanges,
        from before: AnySectionedList<SectionModel, Item>,
        to after: AnySectionedList<SectionModel, Item>
    ) -> [ChangesetStage<SectionModel, Item>] {
        let mapping = PathMapping(changes)
        let deletedSections = changes.sectionDeletes.sorted()
        let insertedSections = changes.sectionInserts.sorted()
        var reloadedSections = Set<Int>()
        var stageE = ListChanges()
        for old in changes.sectionReloads {
            guard let new = mapping.newSection(ofOld: old) else { continue }
            reloadedSections.insert(new)
            stageE.sectionReloads.append(new)
        }

        var stageA = ListChanges()
        var reloadTargets: [ItemPath: ItemPath] = [:]
        reloadTargets.reserveCapacity(changes.itemReloads.count)
        for path in changes.itemReloads {
            guard let target = mapping.newPath(ofOld: path) else { continue }
            reloadTargets[path] = target
            if !reloadedSections.contains(target.section) { stageA.itemReloads.append(path) }
        }

        var stageB = ListChanges()
        stageB.sectionDeletes = changes.sectionDeletes
        var deletesBySection: [Int: [Int]] = [:]
        for path in changes.itemDeletes where !RankMapping.contains(deletedSections, path.section) {
            stageB.itemDeletes.append(path)
            deletesBySection[path.section, default: []].append(path.item)
        }
        for section in deletesBySection.keys { deletesBySection[section]?.sort() }

        var stageC = ListChanges()
        stageC.sectionInserts = changes.sectionInserts
        for move in changes.sectionMoves {
            stageC.sectionMoves.append(Move(from: move.from - RankMapping.countLess(than: move.from, in: deletedSections), to: move.to))
        }

        var stageD = ListChanges()
        for path in changes.itemInserts where !RankMapping.contains(insertedSections, path.section) {
            stageD.itemInserts.append(path)
        }
        for move in changes.itemMoves {
            // Move sources are read in the state after (c): the row's section at its new index,
            // the row's index less the deletes of (b) before it.
            guard let section = mapping.newSection(ofOld: move.from.section) else { continue }
            let deleted = deletesBySection[move.from.section].map { RankMapping.countLess(than: move.from.item, in: $0) } ?? 0
            stageD.itemMoves.append(Move(from: ItemPath(section: section, item: move.from.item - deleted), to: move.to))
        }

        let plan = StagingPlan(
            before: before, after: after, mapping: mapping, deletedSections: deletedSections,
            insertedSections: insertedSections, reloadedSections: reloadedSections,
            deletesBySection: deletesBySection, reloadTargets: reloadTargets)
        let batches = [stageA, stageB, stageC, stageD, stageE]
        var stages: [ChangesetStage<SectionModel, Item>] = []
        if let last = batches.lastIndex(where: { !$0.isEmpty }) {
            for (number, batch) in batches.enumerated() where !batch.isEmpty {
                if number == last {
                    stages.append(ChangesetStage(changes: batch, state: after))
                } else {
                    stages.append(ChangesetStage(changes: batch, state: StagedList(plan: plan, stage: StagedList<SectionModel, Item>.Stage(rawValue: number) ?? .afterReloads)))
                }
            }
        }
        return stages
    }
}

/// What the intermediate states of one staging share.
struct StagingPlan<SectionModel: ListElement, Item: ListElement> {
    let before: AnySectionedList<SectionModel, Item>
    let after: AnySectionedList<SectionModel, Item>
    let mapping: PathMapping
    /// Old indices of deleted sections, sorted.
    let deletedSections: [Int]
    /// New indices of inserted sections, sorted.
    let insertedSections: [Int]
    /// New indices of sections reloaded in the last stage: they show their old model until then.
    let reloadedSections: Set<Int>
    /// Per surviving old section: the item indices deleted in stage (b), sorted.
    let deletesBySection: [Int: [Int]]
    /// Old path → new path of every row whose content changed: it shows its new content from the
    /// first stage on.
    let reloadTargets: [ItemPath: ItemPath]
}

/// An intermediate state of a staged changeset, read through the states before and after it.
struct StagedList<SectionModel: ListElement, Item: ListElement>: SectionedList {
    enum Stage: Int {
        /// The old structure; changed rows show their new content.
        case afterReloads = 0
        /// Without the deleted sections and rows.
        case afterDeletes = 1
        /// The new sections, in the new order; surviving ones still hold their surviving rows.
        case afterSectionChanges = 2
        /// The new rows; reloaded sections still show their old model.
        case afterItemChanges = 3
    }

    let plan: StagingPlan<SectionModel, Item>
    let stage: Stage

    var sectionCount: Int {
        switch stage {
        case .afterReloads: plan.before.sectionCount
        case .afterDeletes: plan.before.sectionCount - plan.deletedSections.count
        case .afterSectionChanges, .afterItemChanges: plan.after.sectionCount
        }
    }

    /// The old section shown at `index` after the deletes.
    private func survivingOldSection(_ index: Int) -> Int {
        RankMapping.select(index, notIn: plan.deletedSections)
    }

    private func survivorCount(ofOld section: Int) -> Int {
        plan.before.itemCount(inSection: section) - (plan.deletesBySection[section]?.count ?? 0)
    }

    private func survivor(ofOld section: Int, at index: Int) -> Item {
        let deleted = plan.deletesBySection[section] ?? []
        return reloaded(ItemPath(section: section, item: RankMapping.select(index, notIn: deleted)))
    }

    private func reloaded(_ old: ItemPath) -> Item {
        if let target = plan.reloadTargets[old] { return plan.after.item(at: target) }
        return plan.before.item(at: old)
    }

    /// The old index of surviving section `new`, or `nil` when it is inserted.
    private func oldSection(ofNew new: Int) -> Int? {
        RankMapping.contains(plan.insertedSections, new) ? nil : plan.mapping.oldSection(ofNew: new)
    }

    func itemCount(inSection section: Int) -> Int {
        switch stage {
        case .afterReloads: return plan.before.itemCount(inSection: section)
        case .afterDeletes: return survivorCount(ofOld: survivingOldSection(section))
        case .afterSectionChanges:
            guard let old = oldSection(ofNew: section) else { return plan.after.itemCount(inSection: section) }
            return survivorCount(ofOld: old)
        case .afterItemChanges: return plan.after.itemCount(inSection: section)
        }
    }

    func section(at index: Int) -> SectionModel {
        switch stage {
        case .afterReloads: return plan.before.section(at: index)
        case .afterDeletes: return plan.before.section(at: survivingOldSection(index))
        case .afterSectionChanges:
            guard let old = oldSection(ofNew: index) else { return plan.after.section(at: index) }
            return plan.before.section(at: old)
        case .afterItemChanges:
            guard plan.reloadedSections.contains(index), let old = oldSection(ofNew: index) else { return plan.after.section(at: index) }
            return plan.before.section(at: old)
        }
    }

    func item(at path: ItemPath) -> Item {
        switch stage {
        case .afterReloads: return reloaded(path)
        case .afterDeletes: return survivor(ofOld: survivingOldSection(path.section), at: path.item)
        case .afterSectionChanges:
            guard let old = oldSection(ofNew: path.section) else { return plan.after.item(at: path) }
            return survivor(ofOld: old, at: path.item)
        case .afterItemChanges: return plan.after.item(at: path)
        }
    }
}

extension StagingPlan: Sendable where SectionModel: Sendable, Item: Sendable {}
extension StagedList: Sendable where SectionModel: Sendable, Item: Sendable {}
