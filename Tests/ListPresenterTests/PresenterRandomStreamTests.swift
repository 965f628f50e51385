import ListDiff
import ListPresenter
import ListTesting
import Testing

/// Seeded random streams of model updates, user actions and animation ends, in any interleaving.
@MainActor
struct PresenterRandomStreamTests {
    static let seed: UInt64 = 0x0005_7EA4_2026

    /// A random model change: inserts, deletes, moves (also across sections), version bumps,
    /// section inserts and deletes.
    static func mutate(_ model: Model, _ random: inout SeededRandomNumberGenerator, nextID: inout Int) -> Model {
        var sections = model.sections
        func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }
        if chance(0.15) || sections.isEmpty {
            nextID += 1
            sections.insert(SnapshotSection(Day(id: nextID), items: []), at: Int.random(in: 0...sections.count, using: &random))
        }
        if chance(0.08) && sections.count > 1 { sections.remove(at: Int.random(in: 0..<sections.count, using: &random)) }
        for _ in 0..<Int.random(in: 1...6, using: &random) {
            let s = Int.random(in: 0..<sections.count, using: &random)
            switch Int.random(in: 0..<5, using: &random) {
            case 0, 1:
                nextID += 1
                sections[s].items.insert(Row(id: nextID), at: Int.random(in: 0...sections[s].items.count, using: &random))
            case 2 where !sections[s].items.isEmpty:
                sections[s].items.remove(at: Int.random(in: 0..<sections[s].items.count, using: &random))
            case 3 where !sections[s].items.isEmpty:
                let item = sections[s].items.remove(at: Int.random(in: 0..<sections[s].items.count, using: &random))
                let t = Int.random(in: 0..<sections.count, using: &random)
                sections[t].items.insert(item, at: Int.random(in: 0...sections[t].items.count, using: &random))
            case 4 where !sections[s].items.isEmpty:
                sections[s].items[Int.random(in: 0..<sections[s].items.count, using: &random)].version += 1
            default:
                break
            }
        }
        return Model(sections: sections)
    }

    /// How a stream reaches the presenter and what it drives.
    enum Mode: String, CaseIterable, Sendable {
        /// Plain snapshots, diffed by the presenter.
        case diff
        /// Chained changesets, applied as they are (the live-query path).
        case direct
        /// Chained changesets on a view with NSCollectionView's sequential batch semantics.
        case appKit
        /// Chained changesets on a view that holds only the cells near its viewport.
        case visibleCells
    }

    nonisolated static let streams: [(Int, Mode)] = Mode.allCases.flatMap { mode in (0..<6).map { ($0, mode) } }

    @Test("random updates, animations, scrolls and selections: no violation ever; the view converges to the latest model with selection by identity", arguments: streams)
    func randomStreams(stream: Int, mode: Mode) async {
        let seed = Self.seed &+ UInt64(stream) &+ UInt64(Mode.allCases.firstIndex(of: mode) ?? 0) * 1_000
        print("PresenterRandomStreamTests.randomStreams(\(mode)): seed \(seed)")
        var random = SeededRandomNumberGenerator(seed: seed)
        var nextID = 0
        var model = Self.mutate(Model(), &random, nextID: &nextID)
        for _ in 0..<5 { model = Self.mutate(model, &random, nextID: &nextID) }
        let fixture = PresenterFixture(model, viewportRows: 6, configuration: .init(reloadThreshold: 40),
                                       kind: mode == .appKit ? .appKitCollectionView : .collectionView,
                                       realization: mode == .visibleCells ? .visible(margin: 2) : .all)
        var source = ChangesetSource(model)
        if mode != .diff { fixture.presenter.replace(with: source.current) }
        var expectedSelection = Set<Int>()
        fixture.presenter.onSelectionDropped = { expectedSelection.subtract($0) }

        var lastEvents: [Int] = []
        for step in 0..<1_000 {
            // Lets the other main-actor tests run at every step: twenty steps of 24 parallel
            // streams between turns held the main actor for half a second at a time, and the
            // controller suites, which need a turn for every page that lands, ran out of their time
            // limits on CI.
            await Task.yield()
            let event = Int.random(in: 0..<100, using: &random)
            lastEvents = Array((lastEvents + [event]).suffix(4))
            let context = "seed \(seed), step \(step), events \(lastEvents)"
            switch event {
            case 0..<35:
                model = Self.mutate(model, &random, nextID: &nextID)
                if mode == .diff { fixture.presenter.update(model) } else { fixture.presenter.apply(source.changeset(to: model)) }
            case 35..<55:
                fixture.view.finishBatchAnimations()
            case 55..<65:
                fixture.view.finishScrollAnimation()
            case 65..<72:
                let ids = model.sections.flatMap(\.items).map(\.id)
                let id = ids.randomElement(using: &random) ?? 0
                fixture.presenter.scrollToItem(id: Bool.random(using: &random) ? id : -1, animated: Bool.random(using: &random))
            case 72..<82:
                if !fixture.view.isInsideBatch, let path = fixture.view.visibleItems.randomElement(using: &random),
                   let id = fixture.view.cellContent(at: path)?.item?.id {
                    fixture.view.setSelected(true, at: path)
                    expectedSelection.insert(id)
                }
            case 82..<87:
                if let path = fixture.view.selectedItems.randomElement(using: &random),
                   let id = fixture.view.cellContent(at: path)?.item?.id {
                    fixture.presenter.deselectItem(id: id)
                    expectedSelection.remove(id)
                }
            case 87..<95:
                fixture.view.setContentOffset(Int.random(in: 0...max(0, fixture.view.maximumContentOffset), using: &random))
            default:
                fixture.presenter.setLoadState([LoadState.loading, .loaded, .empty].randomElement(using: &random) ?? .loaded)
            }
            #expect(fixture.view.violations.isEmpty, "\(fixture.view.violations), \(context)")
            // Whenever nothing is in flight, selection is exactly the selected rows that still exist,
            // and every selected row that left was reported.
            if fixture.presenter.phase == .idle && !fixture.view.isAnimatingBatch {
                let present = Set(fixture.displayedIDs)
                #expect(expectedSelection.isSubset(of: present), "\(context)")
                #expect(Set(fixture.selectedIDs) == expectedSelection, "\(context)")
                if !expectedSelection.isSubset(of: present) || Set(fixture.selectedIDs) != expectedSelection { return }
            }
            if !fixture.view.violations.isEmpty { return }
        }
        fixture.presenter.setLoadState(.loaded)
        fixture.settle()
        #expect(fixture.presenter.phase == .idle, "seed \(seed)")
        #expect(fixture.isConsistent, "seed \(seed)")
        if mode != .diff { #expect(fixture.presenter.statistics.fullDiffs == 0, "a changeset was re-diffed, seed \(seed)") }
        let shownSections = fixture.presenter.displayed.materialized().sections.compactMap(\.model.model?.id)
        #expect(shownSections == model.sections.map(\.model.id), "seed \(seed)")
        #expect(fixture.displayedIDs == model.sections.flatMap(\.items).map(\.id), "seed \(seed)")
        let present = Set(fixture.displayedIDs)
        #expect(expectedSelection.isSubset(of: present), "a deleted selected row was not reported, seed \(seed)")
        #expect(Set(fixture.selectedIDs) == expectedSelection, "seed \(seed)")
    }

    @Test("random changes only above the viewport never move the visible rows", arguments: 0..<4)
    func anchorHoldsForChangesAbove(stream: Int) {
        let seed = Self.seed &+ 100 &+ UInt64(stream)
        print("PresenterRandomStreamTests.anchorHoldsForChangesAbove: seed \(seed)")
        var random = SeededRandomNumberGenerator(seed: seed)
        var ids = Array(0..<300)
        var nextID = 1_000
        let fixture = PresenterFixture(flat(ids), viewportRows: 8)
        fixture.presenter.scrollToItem(id: 200, animated: false)
        let visible = fixture.visibleIDs
        for step in 0..<100 {
            // Insert, delete or reload rows strictly above the first visible row.
            guard let anchorIndex = ids.firstIndex(of: 200) else { break }
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                nextID += 1
                ids.insert(nextID, at: Int.random(in: 0...anchorIndex, using: &random))
            case 1 where anchorIndex > 0:
                ids.remove(at: Int.random(in: 0..<anchorIndex, using: &random))
            default:
                break
            }
            let bumped = ids[0..<max(0, (ids.firstIndex(of: 200) ?? 0))].randomElement(using: &random) ?? -1
            fixture.presenter.update(flat(ids, version: { $0 == bumped ? step + 1 : 0 }))
            if Bool.random(using: &random) { fixture.settle() }
        }
        fixture.settle()
        #expect(fixture.visibleIDs == visible, "seed \(seed)")
        #expect(fixture.screenRow(of: 200) == 0, "seed \(seed)")
        #expect(fixture.isConsistent, "seed \(seed)")
    }
}
