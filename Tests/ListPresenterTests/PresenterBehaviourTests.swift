#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif
import ListDiff
import ListPresenter
import ListTesting
import Testing

@MainActor
struct PresenterBehaviourTests {
    @Test("updates arriving during an animation are coalesced into one diff; none is lost")
    func updatesAreCoalesced() {
        let fixture = PresenterFixture(flat(Array(0..<20)))
        fixture.presenter.update(flat(Array(0..<19)))
        let batches = fixture.view.batchCount
        for last in stride(from: 18, to: 10, by: -1) { fixture.presenter.update(flat(Array(0..<last))) }
        #expect(fixture.view.batchCount == batches)
        #expect(fixture.presenter.statistics.coalescedUpdates == 7)
        fixture.settle()
        #expect(fixture.view.batchCount == batches + 1)
        #expect(fixture.displayedIDs == Array(0..<11))
        #expect(fixture.isConsistent)
    }

    @Test("a change above the reload threshold reloads, keeping the anchor and the selection")
    func largeChangeReloads() {
        let fixture = PresenterFixture(flat(Array(0..<200)), viewportRows: 10, configuration: .init(reloadThreshold: 50))
        fixture.presenter.scrollToItem(id: 150, animated: false)
        fixture.presenter.selectItem(id: 152)
        let reloads = fixture.presenter.statistics.reloads
        fixture.presenter.update(flat(Array(1000..<1100) + Array(0..<200).filter { $0 % 3 != 0 || $0 >= 150 }))
        fixture.settle()
        #expect(fixture.presenter.statistics.reloads == reloads + 1)
        #expect(fixture.screenRow(of: 150) == 0)
        #expect(fixture.selectedIDs == [152])
        #expect(fixture.isConsistent)
    }

    @Test("a view that is not on screen gets a reload instead of animations")
    func offScreenReloads() {
        let fixture = PresenterFixture(flat([1, 2, 3]))
        fixture.view.isOnScreen = false
        let reloads = fixture.presenter.statistics.reloads
        fixture.presenter.update(flat([3, 2]))
        #expect(fixture.presenter.statistics.reloads == reloads + 1 && fixture.presenter.phase == .idle)
        #expect(fixture.isConsistent)
    }

    @Test("content-only changes reconfigure cells in place and keep their selection")
    func contentOnlyChangesReconfigure() {
        let fixture = PresenterFixture(flat([1, 2, 3]))
        fixture.presenter.selectItem(id: 2)
        fixture.presenter.update(flat([1, 2, 3], version: { $0 == 2 ? 5 : 0 }))
        fixture.settle()
        #expect(fixture.view.cellContent(at: ItemPath(section: 0, item: 1))?.item?.version == 5)
        #expect(fixture.selectedIDs == [2])
        #expect(fixture.isConsistent)
    }

    @Test("selected rows that leave are deselected and reported")
    func droppedSelectionIsReported() {
        let fixture = PresenterFixture(flat([1, 2, 3]))
        fixture.presenter.selectItem(id: 2)
        fixture.presenter.selectItem(id: 3)
        fixture.presenter.update(flat([1, 3]))
        fixture.settle()
        #expect(fixture.droppedSelection == [2])
        #expect(fixture.selectedIDs == [3])
    }

    @Test("a deferred scroll to an item that is gone by then is dropped and reported")
    func scrollTargetMissing() {
        let fixture = PresenterFixture(flat(Array(0..<30)))
        fixture.presenter.update(flat(Array(0..<30).filter { $0 != 25 }))
        fixture.presenter.scrollToItem(id: 25, animated: true)
        fixture.settle()
        #expect(fixture.missingScrollTargets == [25])
        #expect(fixture.presenter.phase == .idle && fixture.view.contentOffset == 0)
    }

    @Test("load states show as inline rows that animate in and out; an error row's tap retries")
    func stateBlocks() {
        let fixture = PresenterFixture(Model())
        #expect(fixture.presenter.displayed.materialized().sections.first?.items.first?.id == .block(.list, .empty))
        fixture.presenter.setLoadState(.loading)
        fixture.settle()
        #expect(fixture.presenter.displayed.materialized().sections.first?.items.map(\.id) == [.block(.list, .loading)])

        let retries = RetryCounter()
        struct Offline: Error {}
        fixture.presenter.setLoadState(.failed(LoadFailure(Offline(), message: "offline", retry: { retries.increment() })))
        fixture.settle()
        #expect(fixture.presenter.activateRow(at: ItemPath(section: 0, item: 0)))
        #expect(retries.value == 1)

        fixture.presenter.update(sectioned([(1, [10, 11]), (2, [])]))
        fixture.presenter.setLoadState(.loaded)
        fixture.presenter.setLoadState(.loading, forSection: 1)
        fixture.presenter.setLoadState(.empty, forSection: 2)
        fixture.settle()
        let rows = fixture.presenter.displayed.materialized().sections.map { $0.items.map(\.id) }
        #expect(rows == [[.item(10), .item(11), .block(.section(1), .loading)], [.block(.section(2), .empty)]])
        #expect(!fixture.presenter.activateRow(at: ItemPath(section: 0, item: 0)))
        #expect(fixture.isConsistent)
    }
}

/// A thread-safe counter for retry closures, which must be `@Sendable`.
final class RetryCounter: @unchecked Sendable {
    private let lock = NSLockLike()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// A minimal lock so the test does not need Foundation.
final class NSLockLike: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    init() { pthread_mutex_init(&mutex, nil) }
    deinit { pthread_mutex_destroy(&mutex) }
    func withLock<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return body()
    }
}

@MainActor
struct PresenterReconfigureTests {
    @Test("loaded rows refresh their cells wherever the view holds them — visible, or prepared in its margin — in place, keeping selection; rows not displayed cost nothing")
    func reconfigureHeldCells() {
        let fixture = PresenterFixture(flat(Array(0..<50)), viewportRows: 5, realization: .visible(margin: 2))
        fixture.presenter.selectItem(id: 2)
        let reads = fixture.view.cellReads
        let batches = fixture.view.batchCount
        // 2 and 3 are visible, 6 is held in the margin below the viewport, 40 has no cell.
        fixture.presenter.reconfigureItems(ids: [2, 3, 6, 40])
        fixture.settle()
        #expect(fixture.view.cellReads == reads + 3)
        #expect(fixture.view.batchCount == batches + 1)
        #expect(fixture.selectedIDs == [2])
        #expect(fixture.isConsistent)
        fixture.presenter.reconfigureItems(ids: [999])
        #expect(fixture.view.batchCount == batches + 1)
    }

    @Test("a reconfigure requested during an animation waits for it")
    func reconfigureWaits() {
        let fixture = PresenterFixture(flat(Array(0..<20)), viewportRows: 5)
        fixture.presenter.update(flat(Array(1..<20)))
        #expect(fixture.view.isAnimatingBatch)
        let reads = fixture.view.cellReads
        fixture.presenter.reconfigureItems(ids: [1])
        #expect(fixture.view.cellReads == reads)
        fixture.settle()
        #expect(fixture.view.cellReads > reads)
        #expect(fixture.view.violations.isEmpty)
    }
}
