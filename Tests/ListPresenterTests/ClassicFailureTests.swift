import ListDiff
import ListPresenter
import ListTesting
import Testing

/// One test per failure that app developers hit again and again with UITableView and
/// UICollectionView; each shows the presenter makes it impossible.
@MainActor
struct ClassicFailureTests {
    @Test("a scroll requested while an update is in flight waits and lands on the item's new position")
    func scrollRequestedInsideUpdate() {
        let fixture = PresenterFixture(flat(Array(0..<50)))
        fixture.presenter.update(flat([100, 101, 102] + Array(0..<50)))
        #expect(fixture.view.isAnimatingBatch)
        fixture.presenter.scrollToItem(id: 30, animated: false)
        #expect(fixture.view.violations.isEmpty)
        fixture.settle()
        #expect(fixture.visibleIDs.first == 30)
        #expect(fixture.isConsistent)
    }

    @Test("an update during a programmatic scroll animation waits, then applies")
    func updateDuringScrollAnimation() {
        let fixture = PresenterFixture(flat(Array(0..<50)))
        let reloads = fixture.view.reloadDataCount
        fixture.presenter.scrollToItem(id: 20, animated: true)
        #expect(fixture.presenter.phase == .scrolling && fixture.view.isScrollAnimating)
        let batchesBefore = fixture.view.batchCount
        fixture.presenter.update(flat(Array(0..<50).filter { $0 != 3 }))
        #expect(fixture.view.batchCount == batchesBefore)
        #expect(fixture.view.reloadDataCount == reloads)   // a reload would stop the animation (§4.3)
        fixture.view.finishScrollAnimation()
        #expect(fixture.view.batchCount == batchesBefore + 1)
        fixture.settle()
        #expect(fixture.displayedIDs == Array(0..<50).filter { $0 != 3 })
        #expect(fixture.isConsistent)
    }

    @Test("a scroll to the current position arms nothing, so later updates still apply")
    func scrollToCurrentPosition() {
        let fixture = PresenterFixture(flat(Array(0..<50)))
        fixture.presenter.scrollToItem(id: 0, animated: true)
        #expect(fixture.presenter.phase == .idle)
        fixture.presenter.update(flat(Array(1..<50)))
        #expect(fixture.presenter.phase == .applyingBatch)
        fixture.settle()
        #expect(fixture.displayedIDs == Array(1..<50))
    }

    @Test("deleting the row above a selected row keeps the selection on its row")
    func deleteAboveSelectedRow() {
        let fixture = PresenterFixture(flat(Array(0..<10)))
        #expect(fixture.presenter.selectItem(id: 5))
        fixture.presenter.update(flat(Array(0..<10).filter { $0 != 4 }))
        fixture.settle()
        #expect(fixture.selectedIDs == [5])
        #expect(fixture.presenter.selectedItemIDs == [5])
    }

    @Test("inserting above the first visible row does not move the visible rows")
    func insertAboveFirstVisibleRow() throws {
        let fixture = PresenterFixture(flat(Array(0..<100)), viewportRows: 10)
        fixture.presenter.scrollToItem(id: 40, animated: false)
        #expect(fixture.visibleIDs.first == 40)
        let before = fixture.visibleIDs
        fixture.presenter.update(flat(Array(1000..<1007) + Array(0..<100)))
        fixture.settle()
        #expect(fixture.visibleIDs == before)
        #expect(fixture.screenRow(of: 40) == 0)
        // Deletes and reloads above and at the anchor keep it too.
        fixture.presenter.update(flat(Array(1000..<1003) + Array(0..<100).filter { $0 != 10 }, version: { $0 == 40 ? 1 : 0 }))
        fixture.settle()
        #expect(fixture.screenRow(of: 40) == 0)
        #expect(fixture.isConsistent)
    }

    @Test("a row that is reloaded and moved in one update does not crash the view")
    func reloadAndMoveOfOneRow() {
        let fixture = PresenterFixture(flat([1, 2, 3, 4]))
        fixture.presenter.update(flat([4, 1, 2, 3], version: { $0 == 4 ? 1 : 0 }))
        fixture.settle()
        #expect(fixture.isConsistent)
        #expect(fixture.displayedIDs == [4, 1, 2, 3])
    }

    @Test("an insert and a move to the same index path are never sent in one batch")
    func insertAndMoveToSameIndexPath() {
        let fixture = PresenterFixture(flat([1, 2, 3]))
        fixture.presenter.update(flat([9, 3, 1, 2]))
        fixture.settle()
        #expect(fixture.isConsistent)
        #expect(fixture.displayedIDs == [9, 3, 1, 2])
    }

    @Test("a section deleted while an item moves out of it")
    func sectionDeletedWhileItemMovesOut() {
        let fixture = PresenterFixture(sectioned([(1, [10, 11]), (2, [20, 21])]))
        #expect(fixture.presenter.selectItem(id: 11))
        fixture.presenter.update(sectioned([(2, [20, 11, 21])]))
        fixture.settle()
        #expect(fixture.isConsistent)
        #expect(fixture.displayedIDs == [20, 11, 21])
        #expect(fixture.selectedIDs == [11])
        #expect(fixture.droppedSelection.isEmpty)
    }

    @Test("duplicate identifiers from the source never produce an inconsistent batch")
    func duplicateIdentifiersFromSource() {
        let fixture = PresenterFixture(flat([1, 2, 2, 3]))
        fixture.presenter.update(flat([2, 3, 2, 1, 1]))
        fixture.settle()
        #expect(fixture.isConsistent)
        #expect(fixture.displayedIDs == [2, 3, 2, 1, 1])
    }
}
