import ListDiff
import ListPresenter
import ListTesting
import Testing

/// The presenter's direct path: changesets applied as they come, queued ones composed, work
/// bounded by the change, and a view that never reports never freezing the list.
@MainActor
struct PresenterDirectPathTests {
    static func model(sections: Int, rowsPerSection: Int) -> Model {
        Model(sections: (0..<sections).map { section in
            SnapshotSection(Day(id: section), items: (0..<rowsPerSection).map { Row(id: section * rowsPerSection + $0) })
        })
    }

    /// Moves one row to the top of its section and bumps its version: a one-row write.
    static func oneRowMove(_ model: Model, step: Int) -> Model {
        var sections = model.sections
        let section = step % sections.count
        guard sections[section].items.count > 1 else { return model }
        var row = sections[section].items.remove(at: sections[section].items.count / 2 + step % 7)
        row.version += 1
        sections[section].items.insert(row, at: 0)
        return Model(sections: sections)
    }

    @Test("1,000 changesets arriving during one batch are all reflected, in order, without a diff", arguments: [false, true])
    func coalescingDuringABatch(duringScroll: Bool) throws {
        var model = Self.model(sections: 3, rowsPerSection: 200)
        let fixture = PresenterFixture(model, viewportRows: 10)
        var source = ChangesetSource(model)
        fixture.presenter.replace(with: source.current)
        fixture.settle()
        if duringScroll {
            fixture.presenter.scrollToItem(id: 400, animated: true)
            #expect(fixture.presenter.phase == .scrolling)
        } else {
            model = Self.oneRowMove(model, step: 0)
            fixture.presenter.apply(source.changeset(to: model))
            #expect(fixture.presenter.phase == .applyingBatch)
        }
        let batches = fixture.view.batchCount
        for step in 1...1_000 {
            model = Self.oneRowMove(model, step: step)
            fixture.presenter.apply(source.changeset(to: model))
        }
        #expect(fixture.view.batchCount == batches, "nothing may touch the view while it animates")
        fixture.settle()
        #expect(fixture.presenter.phase == .idle)
        #expect(fixture.displayedIDs == model.sections.flatMap(\.items).map(\.id))
        #expect(fixture.isConsistent)
        #expect(fixture.presenter.statistics.fullDiffs == 0)
        #expect(fixture.presenter.statistics.coalescedUpdates >= 999)
        // Composed into one change: a handful of batches, not a thousand.
        #expect(fixture.view.batchCount - batches <= 8, "\(fixture.view.batchCount - batches) batches")
    }

    @Test("a one-row change reads a bounded number of rows, whatever the list's size")
    func workDoesNotGrowWithTheList() throws {
        func readsPerUpdate(rowsPerSection: Int) -> Int {
            var model = Self.model(sections: 4, rowsPerSection: rowsPerSection)
            let counter = ReadCounter()
            var generation: UInt64 = 0
            func counted(_ model: Model) -> CountingList<VersionedList> {
                generation += 1
                return CountingList(base: VersionedList(snapshot: model, generation: generation), counter: counter)
            }
            let presenter = Presenter()
            let (view, dataSource) = presenter.attachHeadlessView(realization: .visible(margin: 5), viewportRows: 20)
            var current = counted(model)
            presenter.replace(with: current)
            view.layoutIfNeeded()
            view.setContentOffset(rowsPerSection + 10)
            var reads: [Int] = []
            for step in 0..<6 {
                let next = Self.oneRowMove(model, step: step)
                let changes = Changeset(from: model, to: next).changes   // the source's work, not counted
                let after = counted(next)
                counter.reads = 0
                presenter.apply(Changeset(changes: changes, from: current, to: after))
                reads.append(counter.reads)
                model = next
                current = after
            }
            withExtendedLifetime(dataSource) {}
            #expect(view.violations.isEmpty && view.staleCells().isEmpty)
            return reads.max() ?? 0
        }
        let small = readsPerUpdate(rowsPerSection: 1_000)
        let large = readsPerUpdate(rowsPerSection: 10_000)
        print("PresenterDirectPathTests: reads per one-row update: \(small) at 4k rows, \(large) at 40k rows")
        #expect(large <= small + 4, "reads grew with the list: \(small) → \(large)")
        #expect(large < 500)
    }

    @Test("a batch whose completion never comes is treated as done after the time-out; later changes still land")
    func batchCompletionNeverComes() async throws {
        var model = Self.model(sections: 1, rowsPerSection: 20)
        let fixture = PresenterFixture(model, configuration: .init(completionTimeout: .milliseconds(50)))
        fixture.view.dropsBatchCompletions = true
        model = Self.oneRowMove(model, step: 1)
        fixture.presenter.update(model)
        #expect(fixture.presenter.phase == .applyingBatch)
        try await waitUntilIdle(fixture.presenter)
        #expect(fixture.presenter.statistics.timedOutBatches >= 1)
        model = Self.oneRowMove(model, step: 2)
        fixture.presenter.update(model)
        try await waitUntilIdle(fixture.presenter)
        #expect(fixture.displayedIDs == model.sections.flatMap(\.items).map(\.id))
        #expect(fixture.isConsistent)
    }

    @Test("a batch that times out keeps the selection on its rows: a selected row it deleted is reported dropped, a moved one stays selected")
    func timedOutBatchKeepsSelection() async throws {
        let model = flat(Array(0..<20))
        let fixture = PresenterFixture(model, configuration: .init(completionTimeout: .milliseconds(50)))
        fixture.view.dropsBatchCompletions = true
        for id in [2, 4] {
            let path = try #require(fixture.path(of: id))
            fixture.view.setSelected(true, at: path)
        }
        // Row 2 goes, row 4 moves to the end: one stage of deletes and moves.
        fixture.presenter.update(flat([0, 1, 3] + Array(5..<20) + [4]))
        #expect(fixture.presenter.phase == .applyingBatch)
        try await waitUntilIdle(fixture.presenter)
        #expect(fixture.presenter.statistics.timedOutBatches >= 1)
        #expect(fixture.droppedSelection == [2])
        #expect(fixture.selectedIDs == [4])
        #expect(fixture.isConsistent)
    }

    @Test("a scroll animation whose end never comes is treated as done after the time-out")
    func scrollEndNeverComes() async throws {
        let model = Self.model(sections: 1, rowsPerSection: 50)
        let fixture = PresenterFixture(model, configuration: .init(completionTimeout: .milliseconds(50)))
        fixture.presenter.scrollToItem(id: 30, animated: true)
        #expect(fixture.presenter.phase == .scrolling)
        fixture.presenter.update(Self.oneRowMove(model, step: 3))
        try await waitUntilIdle(fixture.presenter)
        #expect(fixture.presenter.statistics.timedOutScrolls == 1)
        #expect(fixture.isConsistent)
    }

    @Test("a scroll to where the view already is, within a pixel's rounding, does not wait for an end that never comes")
    func subpixelScrollDoesNotWait() {
        let model = Self.model(sections: 1, rowsPerSection: 50)
        let presenter = Presenter(configuration: .init(completionTimeout: nil))
        presenter.update(model)
        let dataSource = PresenterDataSource(presenter)
        let view = View(dataSource: dataSource, viewportRows: 5)
        let target = SubpixelTarget(view)
        presenter.target = target
        view.layoutIfNeeded()
        view.setContentOffset(10)
        // The row at the top is at 10.3 in the target's geometry: the view rounds a scroll there
        // to where it is, animates nothing and never calls back.
        presenter.scrollToItem(id: 10, animated: true)
        #expect(presenter.phase == .idle)
        presenter.update(Self.oneRowMove(model, step: 1))
        #expect(presenter.phase == .idle)
        #expect(view.violations.isEmpty && view.staleCells().isEmpty)
    }

    func waitUntilIdle(_ presenter: Presenter) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(300))   // a hang guard: other tests may hold the main actor for long (ThreadSanitizer)
        while presenter.phase != .idle {
            guard clock.now < deadline else { throw TimedOut() }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    struct TimedOut: Error {}
}

/// A target whose geometry is off by a fraction of a pixel from the view's row grid, as a real
/// view's layout is from its pixel-rounded offsets.
@MainActor
final class SubpixelTarget: ListTarget {
    let view: View
    init(_ view: View) { self.view = view }

    func performBatch(_ updates: () -> Void, completion: @escaping @MainActor () -> Void) { view.performBatch(updates, completion: completion) }
    func recordChanges(_ changes: ListChanges) { view.recordChanges(changes) }
    func recordReconfigures(_ paths: [ItemPath]) { view.recordReconfigures(paths) }
    var supportsReconfigure: Bool { view.supportsReconfigure }
    func reloadAll() { view.reloadAll() }
    func layoutNow() { view.layoutNow() }
    var isOnScreen: Bool { view.isOnScreen }
    var visibleItemPaths: [ItemPath] { view.visibleItemPaths }
    func contentTop(of path: ItemPath) -> Double? { view.contentTop(of: path).map { $0 + 0.3 } }
    var scrollOffset: Double { view.scrollOffset }
    var maximumScrollOffset: Double { view.maximumScrollOffset + 0.3 }
    func scroll(to offset: Double, animated: Bool) { view.scroll(to: offset, animated: animated) }
    var scrollAnimationDidEnd: (@MainActor () -> Void)? {
        get { view.scrollAnimationDidEnd }
        set { view.scrollAnimationDidEnd = newValue }
    }
    var selectedItemPaths: [ItemPath] { view.selectedItemPaths }
    func setSelected(_ isSelected: Bool, at path: ItemPath) { view.setSelected(isSelected, at: path) }
}
