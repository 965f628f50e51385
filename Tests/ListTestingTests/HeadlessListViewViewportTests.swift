import ListDiff
import ListTesting
import Testing

private typealias Row = VersionedItem<Int, Int>
private typealias Flat = ListSnapshot<SingleSection, Row>

@MainActor
private func flatView(_ ids: [Int], viewport: Int = 3) -> (HeadlessListView<Row, SingleSection>, SnapshotDataSource<SingleSection, Row>) {
    let dataSource = SnapshotDataSource(Flat(items: ids.map { Row(id: $0) }))
    let view = HeadlessListView(dataSource: dataSource, viewportRows: viewport)
    view.layoutIfNeeded()
    return (view, dataSource)
}

private func path(_ item: Int) -> ItemPath { ItemPath(section: 0, item: item) }

@MainActor
struct HeadlessListViewViewportTests {
    @Test("§4.1: inserting above the viewport keeps the offset, so the visible rows shift")
    func insertAboveShiftsVisibleRows() throws {
        let (view, dataSource) = flatView(Array(1...10))
        view.setContentOffset(4)
        #expect(view.firstVisibleItem == path(4))
        try view.performBatchUpdates { () throws(BatchUpdateViolation) in
            dataSource.snapshot = Flat(items: ([0] + Array(1...10)).map { Row(id: $0) })
            try view.insertItems(at: [path(0)])
        }
        #expect(view.contentOffset == 4)
        #expect(view.cellContent(at: view.firstVisibleItem ?? path(0))?.id == 4)
    }

    @Test("§4.3: scrolling to where the view already is starts no animation and calls nothing")
    func scrollToCurrentPosition() throws {
        let (view, _) = flatView(Array(1...10))
        var ended = 0
        view.onScrollAnimationEnded = { ended += 1 }
        try view.scrollToItem(at: path(0), animated: true)
        #expect(!view.isScrollAnimating)
        try view.scrollToItem(at: path(5), animated: true)
        #expect(view.isScrollAnimating)
        view.finishScrollAnimation()
        #expect(view.contentOffset == 5 && ended == 1 && !view.isScrollAnimating)
    }

    @Test("§4.3: reloadData during a programmatic scroll animation stops it without the end callback")
    func reloadDataStopsScrollAnimation() throws {
        let (view, _) = flatView(Array(1...10))
        var ended = 0
        view.onScrollAnimationEnded = { ended += 1 }
        try view.scrollToItem(at: path(6), animated: true)
        try view.reloadData()
        #expect(!view.isScrollAnimating)
        view.finishScrollAnimation()
        #expect(ended == 0)
    }

    @Test("§4.4: a programmatic scroll inside a batch raises")
    func scrollDuringBatch() {
        let (view, _) = flatView([1, 2])
        #expect(throws: BatchUpdateViolation.scrollDuringBatch) {
            try view.performBatchUpdates { () throws(BatchUpdateViolation) in try view.scrollToItem(at: path(1), animated: false) }
        }
    }

    @Test("§4.5: selection follows moves, survives reconfigure, is lost by reload, delete and reloadData")
    func selectionFollowsCells() throws {
        let (view, dataSource) = flatView([1, 2, 3, 4])
        try view.selectItem(at: path(0))
        try view.selectItem(at: path(1))
        try view.selectItem(at: path(2))
        try view.performBatchUpdates { () throws(BatchUpdateViolation) in
            dataSource.snapshot = Flat(items: [Row(id: 2, version: 1), Row(id: 4), Row(id: 1)])
            try view.moveItem(at: path(0), to: path(2))
            try view.reloadItems(at: [path(1)])
            try view.deleteItems(at: [path(2)])
        }
        #expect(view.selectedItems == [path(2)])
        try view.selectItem(at: path(1))
        try view.performBatchUpdates { () throws(BatchUpdateViolation) in
            dataSource.snapshot = Flat(items: [Row(id: 2, version: 1), Row(id: 4, version: 1), Row(id: 1)])
            try view.reconfigureItems(at: [path(1)])
        }
        #expect(view.selectedItems == [path(1), path(2)])
        #expect(view.staleCells().isEmpty)
        try view.reloadData()
        #expect(view.selectedItems.isEmpty)
    }

    @Test("batch completions wait for the animation when asked to")
    func batchCompletionWaitsForAnimation() throws {
        let (view, dataSource) = flatView([1])
        view.completesBatchAnimationsImmediately = false
        var completed = false
        try view.performBatchUpdates({ () throws(BatchUpdateViolation) in
            dataSource.snapshot = Flat(items: [Row(id: 1), Row(id: 2)])
            try view.insertItems(at: [path(1)])
        }, completion: { _ in completed = true })
        #expect(view.isAnimatingBatch && !completed)
        view.finishBatchAnimations()
        #expect(!view.isAnimatingBatch && completed)
    }
}
