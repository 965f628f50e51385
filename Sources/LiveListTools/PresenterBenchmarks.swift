import ListDiff
import ListPresenter
import ListTesting

/// `presenter.apply.10k`: a 10k-row random changeset applied through the presenter to the strict
/// headless view (diff, stages, anchoring, selection restore and the view's own rule checks).
public enum PresenterBenchmarks {
    typealias Row = VersionedItem<Int, Int>
    typealias Section = VersionedItem<Int, Int>
    typealias Model = ListSnapshot<Section, Row>

    /// 10k rows in 20 sections; then 10% deleted, 10% inserted, 2% moved (some across sections),
    /// 5% changed content.
    static func workload(seed: UInt64) -> (old: Model, new: Model) {
        var random = SeededRandomNumberGenerator(seed: seed)
        var nextID = 0
        let old = Model(sections: (0..<20).map { section in
            SnapshotSection(Section(id: section), items: (0..<500).map { _ in
                nextID += 1
                return Row(id: nextID, version: 0)
            })
        })
        var sections = old.sections
        for index in sections.indices {
            sections[index].items.removeAll { _ in Int.random(in: 0..<10, using: &random) == 0 }
            for item in sections[index].items.indices where Int.random(in: 0..<20, using: &random) == 0 {
                sections[index].items[item].version += 1
            }
        }
        for _ in 0..<200 {
            let from = Int.random(in: 0..<sections.count, using: &random)
            guard !sections[from].items.isEmpty else { continue }
            let row = sections[from].items.remove(at: Int.random(in: 0..<sections[from].items.count, using: &random))
            let to = Int.random(in: 0..<sections.count, using: &random)
            sections[to].items.insert(row, at: Int.random(in: 0...sections[to].items.count, using: &random))
        }
        for _ in 0..<1_000 {
            nextID += 1
            let to = Int.random(in: 0..<sections.count, using: &random)
            sections[to].items.insert(Row(id: nextID, version: 0), at: Int.random(in: 0...sections[to].items.count, using: &random))
        }
        return (old, Model(sections: sections))
    }

    /// Runs the presenter benchmarks whose name starts with `filter` (all when `nil`).
    @MainActor
    public static func run(quick: Bool, filter: String?) throws -> [BenchResult] {
        guard filter.map({ "presenter.apply.10k".hasPrefix($0) }) ?? true else { return [] }
        do {
            let (old, new) = workload(seed: 10)
            let runs = quick ? 5 : 21
            var stages = 0
            var batches = 0
            let median = Stopwatch.median(runs: runs, prepare: { () -> (ListPresenter<Section, Row>, AnyObject, AnyObject) in
                let presenter = ListPresenter<Section, Row>()
                presenter.update(old)
                let (view, dataSource) = presenter.attachHeadlessView(viewportRows: 40)
                view.layoutIfNeeded()
                view.setContentOffset(2_000)
                return (presenter, view, dataSource)
            }) { prepared in
                let before = prepared.0.statistics.batches
                prepared.0.update(new)
                batches = prepared.0.statistics.batches - before
            }
            // Verify once, outside the timing: the view must end in the target state, rule-clean.
            let presenter = ListPresenter<Section, Row>()
            presenter.update(old)
            let (view, dataSource) = presenter.attachHeadlessView(viewportRows: 40)
            view.layoutIfNeeded()
            let changeset = Changeset(from: old, to: new)
            stages = changeset.stages.count
            presenter.update(new)
            guard view.violations.isEmpty, view.staleCells().isEmpty,
                  presenter.model.snapshot == new else {
                throw BenchFailure("presenter.apply.10k: the view did not reach the target cleanly")
            }
            withExtendedLifetime(dataSource) {}
            var result = BenchResult(name: "presenter.apply.10k", medianMilliseconds: median, runs: runs)
            result.add("rows", .integer(10_000))
            result.add("changes", .integer(Int64(changeset.changes.count)))
            result.add("stages", .integer(Int64(stages)))
            result.add("batches", .integer(Int64(batches)))
            result.add("ms_per_stage", .double(BenchResult.rounded(median / Double(max(1, batches)))))
            return [result]
        }
    }
}
