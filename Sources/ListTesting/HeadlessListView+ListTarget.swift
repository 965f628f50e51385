import ListDiff
import ListPresenter

extension HeadlessListView: ListTarget {
    public func performBatch(_ updates: () -> Void, completion: @escaping @MainActor () -> Void) {
        do {
            try performBatchUpdates({ () throws(BatchUpdateViolation) in updates() }, completion: { _ in completion() })
        } catch {
            // UIKit would have crashed here; record it and let the caller go on so that a test sees
            // every violation rather than a hang.
            violations.append(error)
            completion()
        }
    }

    /// Records `changes`; as an `NSCollectionView`, in the form its adapter sends
    /// (``ListDiff/ListChanges/asDeletesAndInserts``).
    public func recordChanges(_ changes: ListChanges) {
        do { try apply(kind == .appKitCollectionView ? changes.asDeletesAndInserts : changes) } catch { violations.append(error) }
    }

    public func recordReconfigures(_ paths: [ItemPath]) {
        guard kind != .appKitCollectionView else {
            var reloads = ListChanges()
            reloads.itemReloads = paths
            return recordChanges(reloads)
        }
        do { try reconfigureItems(at: paths) } catch { violations.append(error) }
    }

    public var supportsReconfigure: Bool { kind != .appKitCollectionView }

    public var keepsCellsOnMove: Bool { kind != .appKitCollectionView }

    public func reloadAll() {
        do { try reloadData() } catch { violations.append(error) }
    }

    public func layoutNow() { layoutIfNeeded() }

    public var visibleItemPaths: [ItemPath] { visibleItems }

    public func contentTop(of path: ItemPath) -> Double? { row(of: path).map(Double.init) }

    public var scrollOffset: Double { Double(contentOffset) }

    public var maximumScrollOffset: Double { Double(maximumContentOffset) }

    public func scroll(to offset: Double, animated: Bool) {
        do { try setContentOffset(Int(offset.rounded()), animated: animated) } catch { violations.append(error) }
    }

    public var scrollAnimationDidEnd: (@MainActor () -> Void)? {
        get { onScrollAnimationEnded }
        set { onScrollAnimationEnded = newValue }
    }

    public var selectedItemPaths: [ItemPath] { selectedItems }

    public func setSelected(_ isSelected: Bool, at path: ItemPath) {
        do {
            if isSelected { try selectItem(at: path) } else { try deselectItem(at: path) }
        } catch {
            violations.append(error)
        }
    }
}

/// A data source that shows what a ``ListPresenter`` displays, as a UIKit data source reading
/// `presenter.displayed` would.
@MainActor
public final class PresenterDataSource<SectionModel: ListElement, Item: ListElement>: HeadlessListDataSource {
    /// The presenter type this data source reads.
    public typealias Presenter = ListPresenter<SectionModel, Item>
    /// The presenter whose `displayed` snapshot this data source shows.
    public weak var presenter: Presenter?

    /// Creates a data source for `presenter`.
    public init(_ presenter: Presenter) { self.presenter = presenter }

    public func numberOfSections() -> Int { presenter?.displayed.sectionCount ?? 0 }
    public func numberOfItems(inSection section: Int) -> Int { presenter?.displayed.itemCount(inSection: section) ?? 0 }
    public func cell(at path: ItemPath) -> Presenter.Row {
        presenter?.displayed.item(at: path) ?? .block(StateBlock(scope: .list, kind: .empty))
    }
    public func header(forSection section: Int) -> PresentedSection<SectionModel> {
        presenter?.displayed.section(at: section) ?? .listStatus
    }
}

extension ListPresenter {
    /// A headless view attached as this presenter's target, reading `displayed` through a
    /// ``PresenterDataSource`` (returned too: keep it alive as long as the view).
    public func attachHeadlessView(
        kind: HeadlessView.Kind = .collectionView,
        realization: HeadlessView.Realization = .all,
        viewportRows: Int = 20, sectionHeaderRows: Int = 0
    ) -> (view: HeadlessView, dataSource: PresenterDataSource<SectionModel, Item>) {
        let dataSource = PresenterDataSource(self)
        let view = HeadlessView(
            dataSource: dataSource, kind: kind, realization: realization, viewportRows: viewportRows, sectionHeaderRows: sectionHeaderRows)
        target = view
        return (view, dataSource)
    }
}
