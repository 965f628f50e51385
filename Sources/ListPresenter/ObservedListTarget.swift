import ListDiff

/// The view of a ``ListCellSource``'s presenter, as the presenter sees it: every call goes to the
/// view, and the cell source hears when a batch has finished or the view reloaded — the moments
/// when what is visible may need records.
@MainActor
final class ObservedListTarget: ListTarget {
    let base: any ListTarget
    private let didChange: @MainActor () -> Void

    init(base: any ListTarget, didChange: @escaping @MainActor () -> Void) {
        self.base = base
        self.didChange = didChange
    }

    func performBatch(_ updates: () -> Void, completion: @escaping @MainActor () -> Void) {
        let didChange = didChange
        base.performBatch(updates, completion: {
            completion()
            didChange()
        })
    }

    func reloadAll() {
        base.reloadAll()
        didChange()
    }

    func recordChanges(_ changes: ListChanges) { base.recordChanges(changes) }
    func recordReconfigures(_ paths: [ItemPath]) { base.recordReconfigures(paths) }
    var supportsReconfigure: Bool { base.supportsReconfigure }
    var keepsCellsOnMove: Bool { base.keepsCellsOnMove }
    func layoutNow() { base.layoutNow() }
    var isOnScreen: Bool { base.isOnScreen }
    var visibleItemPaths: [ItemPath] { base.visibleItemPaths }
    func contentTop(of path: ItemPath) -> Double? { base.contentTop(of: path) }
    var scrollOffset: Double { base.scrollOffset }
    var maximumScrollOffset: Double { base.maximumScrollOffset }
    func scroll(to offset: Double, animated: Bool) { base.scroll(to: offset, animated: animated) }
    var selectedItemPaths: [ItemPath] { base.selectedItemPaths }
    func setSelected(_ isSelected: Bool, at path: ItemPath) { base.setSelected(isSelected, at: path) }

    var scrollAnimationDidEnd: (@MainActor () -> Void)? {
        get { base.scrollAnimationDidEnd }
        set { base.scrollAnimationDidEnd = newValue }
    }
}
