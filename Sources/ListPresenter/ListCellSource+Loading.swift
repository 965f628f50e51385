import ListDiff

extension ListCellSource {
    /// Loads the records of displayed `paths` — the rows that scrolled into view — with
    /// ``prefetch`` rows around them. Adapters call it as the view scrolls; cells asked for
    /// load their own rows anyway. State rows are skipped. While the view still displays an older
    /// state than the presenter's newest, nothing loads: the view's next batch triggers it.
    ///
    /// - Complexity: O(paths · log n) for a live result, plus the provider's work for the range
    ///   and one pass over the sections per model state when the list has several.
    public func visibleRangeDidChange(_ paths: [ItemPath]) {
        guard isCaughtUp else { return }
        let displayed = presenter.displayed
        var lowest = Int.max
        var highest = Int.min
        for path in paths {
            guard let modelPath = displayed.modelPath(ofDisplayed: path) else { continue }
            let position = position(ofModelPath: modelPath, in: displayed.model)
            lowest = min(lowest, position)
            highest = max(highest, position)
        }
        guard lowest <= highest else { return }
        records.loadRecords(at: lowest..<highest + 1, prefetch: prefetch)
    }

    /// Whether the view shows the presenter's newest model: positions in the displayed model are
    /// then positions in the provider's list.
    var isCaughtUp: Bool { presenter.displaysNewestModel }

    /// The flat position of `path` in `model`: the item itself in a one-section list; otherwise
    /// through the section starts, computed once per model state.
    func position(ofModelPath path: ItemPath, in model: AnySectionedList<SectionModel, Item>) -> Int {
        guard path.section > 0 else { return path.item }
        if let cached = sectionStarts, cached.state == model.stateID, path.section < cached.starts.count {
            return cached.starts[path.section] + path.item
        }
        var starts: [Int] = []
        starts.reserveCapacity(model.sectionCount)
        var total = 0
        for section in 0..<model.sectionCount {
            starts.append(total)
            total += model.itemCount(inSection: section)
        }
        if let state = model.stateID { sectionStarts = (state, starts) }
        return (path.section < starts.count ? starts[path.section] : total) + path.item
    }

    /// A batch landed, the view reloaded or records landed: once the presenter has moved on, load
    /// what is visible then and still missing (once per turn of the main actor, however many
    /// calls came) — a row that changed while its page was loading is only loaded by asking again.
    func scheduleVisibleLoad() {
        guard !refreshScheduled else { return }
        refreshScheduled = true
        Task { @MainActor [weak self] in
            guard let self else { return }
            refreshScheduled = false
            guard let target = presenter.target else { return }
            let visible = target.visibleItemPaths
            if placeholders.count > Self.placeholderLimit { forgetPlaceholders(keeping: visible) }
            visibleRangeDidChange(visible)
        }
    }

    /// Placeholders of rows that left the list never land: past this many, only those of the
    /// rows around the visible ones are kept.
    static var placeholderLimit: Int { 1_024 }

    /// Keeps the placeholders of the rows within one screen (and ``prefetch`` rows) of the visible
    /// `paths`: the cells a view holds — visible, or prepared ahead of a scroll — are among them.
    /// Other cells are asked for afresh when they come into view.
    private func forgetPlaceholders(keeping paths: [ItemPath]) {
        let displayed = presenter.displayed
        guard let first = paths.min(), let last = paths.max() else {
            placeholders = [:]
            return
        }
        let margin = paths.count + prefetch
        var kept: [Item.ID: Bool] = [:]
        var path = Self.step(from: first, by: -margin, in: displayed)
        let end = Self.step(from: last, by: margin, in: displayed)
        while path <= end {
            if let id = displayed.itemIfPresent(at: path)?.item?.id, let failed = placeholders[id] { kept[id] = failed }
            guard let next = Self.step(after: path, in: displayed) else { break }
            path = next
        }
        placeholders = kept
    }

    /// The displayed path `count` items from `path` (negative: before it), clamped to the list.
    private static func step(from path: ItemPath, by count: Int, in displayed: PresentedList<SectionModel, Item>) -> ItemPath {
        var section = path.section, item = path.item + count
        while item < 0, section > 0 {
            section -= 1
            item += displayed.itemCount(inSection: section)
        }
        while section < displayed.sectionCount - 1, item >= displayed.itemCount(inSection: section) {
            item -= displayed.itemCount(inSection: section)
            section += 1
        }
        return ItemPath(section: section, item: max(0, item))
    }

    /// The displayed path after `path` (`nil` at the end of the list).
    private static func step(after path: ItemPath, in displayed: PresentedList<SectionModel, Item>) -> ItemPath? {
        var section = path.section, item = path.item + 1
        while section < displayed.sectionCount, item >= displayed.itemCount(inSection: section) {
            section += 1
            item = 0
        }
        return section < displayed.sectionCount ? ItemPath(section: section, item: item) : nil
    }

    /// Records landed: the cells that showed those rows as placeholders re-read them (the
    /// presenter reconfigures them wherever the view holds them), and what is visible and still
    /// missing is asked for again.
    func rowsDidLoad(_ ids: [Item.ID]) {
        var landed: [Item.ID] = []
        for id in ids where placeholders.removeValue(forKey: id) != nil { landed.append(id) }
        if !landed.isEmpty { presenter.reconfigureItems(ids: landed) }
        scheduleVisibleLoad()
    }

    /// A page started loading, failed or finished: visible placeholders whose failure shown is no
    /// longer right (a failure to show, or one retried) are reconfigured.
    func loadStateDidChange() {
        guard isCaughtUp, !placeholders.isEmpty, let target = presenter.target else { return }
        let displayed = presenter.displayed
        var changed: [Item.ID] = []
        for path in target.visibleItemPaths {
            guard let item = displayed.itemIfPresent(at: path)?.item, let shownFailed = placeholders[item.id],
                  let modelPath = displayed.modelPath(ofDisplayed: path) else { continue }
            let position = position(ofModelPath: modelPath, in: displayed.model)
            if records.placeholderState(atPosition: position).isFailed != shownFailed { changed.append(item.id) }
        }
        if !changed.isEmpty { presenter.reconfigureItems(ids: changed) }
    }
}

extension ListPresenter {
    /// Whether ``displayed`` shows the newest model: no model change is in flight or waiting (a
    /// batch that only reconfigures cells or changes state rows keeps the model).
    var displaysNewestModel: Bool { state.modelInFlight == nil && !pending.hasModelWork }
}
