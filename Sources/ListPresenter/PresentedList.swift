import ListDiff

/// Where the presenter shows load states: the list's row in a status section on top, and a
/// trailing row in each section that has a state. Placed around the model's rows, never by
/// touching them.
public struct BlockLayout<SectionModel: ListElement> {
    /// The list's own state row, shown alone in a section above the model's sections.
    public var list: StateBlock<SectionModel.ID>?
    /// The state row at the end of each section that has one, by section identity.
    public var sections: [SectionModel.ID: StateBlock<SectionModel.ID>]

    /// No state rows.
    public init(list: StateBlock<SectionModel.ID>? = nil, sections: [SectionModel.ID: StateBlock<SectionModel.ID>] = [:]) {
        self.list = list
        self.sections = sections
    }

    /// The sections before the model's first one: 1 when the list's state row shows, else 0.
    public var sectionOffset: Int { list == nil ? 0 : 1 }
}

/// What a view's data source reads from a ``ListPresenter``: the model's rows — a view over
/// whatever holds them, a live query's result included, never a copy — with the load-state rows
/// placed around them.
///
/// ```swift
/// import ListDiff
/// import ListPresenter
///
/// @MainActor
/// func numberOfSections(_ presenter: ListPresenter<VersionedItem<Int, Int>, VersionedItem<Int, Int>>) -> Int {
///     presenter.displayed.sectionCount
/// }
/// ```
///
/// - Complexity: each read costs what the model's costs (O(1) for a snapshot, O(log n) for a
///   live query's result), plus a dictionary lookup when sections have states.
public struct PresentedList<SectionModel: ListElement, Item: ListElement>: SectionedList {
    /// The model's rows.
    public let model: AnySectionedList<SectionModel, Item>
    /// The state rows around them.
    public let blocks: BlockLayout<SectionModel>

    /// Shows `model` with `blocks`.
    public init(model: AnySectionedList<SectionModel, Item>, blocks: BlockLayout<SectionModel>) {
        self.model = model
        self.blocks = blocks
    }

    /// Nothing at all.
    public init() {
        self.init(model: AnySectionedList(ListSnapshot<SectionModel, Item>()), blocks: BlockLayout())
    }

    public var sectionCount: Int { model.sectionCount + blocks.sectionOffset }

    /// The section of the model shown at displayed section `section`, or `nil` for the status
    /// section.
    public func modelSection(_ section: Int) -> Int? {
        let modelSection = section - blocks.sectionOffset
        return modelSection >= 0 ? modelSection : nil
    }

    /// The state row of model section `modelSection`, if it has one.
    func block(ofModelSection modelSection: Int) -> StateBlock<SectionModel.ID>? {
        guard !blocks.sections.isEmpty else { return nil }
        return blocks.sections[model.section(at: modelSection).id]
    }

    public func itemCount(inSection section: Int) -> Int {
        guard let modelSection = modelSection(section) else { return 1 }
        return model.itemCount(inSection: modelSection) + (block(ofModelSection: modelSection) == nil ? 0 : 1)
    }

    public func section(at index: Int) -> PresentedSection<SectionModel> {
        guard let modelSection = modelSection(index) else { return .listStatus }
        return .section(model.section(at: modelSection))
    }

    public func item(at path: ItemPath) -> PresentedRow<SectionModel, Item> {
        guard let modelSection = modelSection(path.section) else {
            return .block(blocks.list ?? StateBlock(scope: .list, kind: .empty))
        }
        if path.item < model.itemCount(inSection: modelSection) {
            return .item(model.item(at: ItemPath(section: modelSection, item: path.item)))
        }
        return .block(block(ofModelSection: modelSection) ?? StateBlock(scope: .list, kind: .empty))
    }

    /// The row at `path`, or `nil` outside the list.
    public subscript(path: ItemPath) -> PresentedRow<SectionModel, Item> { item(at: path) }

    public var itemCount: Int {
        var count = model.itemCount + (blocks.list == nil ? 0 : 1)
        if !blocks.sections.isEmpty {
            for id in blocks.sections.keys where model.index(ofSection: id) != nil { count += 1 }
        }
        return count
    }

    public func path(ofItem id: PresentedRow<SectionModel, Item>.ID) -> ItemPath? {
        switch id {
        case let .item(itemID):
            return model.path(ofItem: itemID).map { ItemPath(section: $0.section + blocks.sectionOffset, item: $0.item) }
        case let .block(scope, _):
            switch scope {
            case .list: return blocks.list == nil ? nil : ItemPath(section: 0, item: 0)
            case let .section(sectionID):
                guard blocks.sections[sectionID] != nil, let index = model.index(ofSection: sectionID) else { return nil }
                return ItemPath(section: index + blocks.sectionOffset, item: model.itemCount(inSection: index))
            }
        }
    }

    public func index(ofSection id: PresentedSection<SectionModel>.ID) -> Int? {
        switch id {
        case .listStatus: blocks.list == nil ? nil : 0
        case let .section(sectionID): model.index(ofSection: sectionID).map { $0 + blocks.sectionOffset }
        }
    }

    /// The displayed path of the model's item at `path`.
    public func displayedPath(ofModelPath path: ItemPath) -> ItemPath {
        ItemPath(section: path.section + blocks.sectionOffset, item: path.item)
    }

    /// The model path of the displayed `path`, or `nil` for a state row.
    public func modelPath(ofDisplayed path: ItemPath) -> ItemPath? {
        guard let section = modelSection(path.section), path.item < model.itemCount(inSection: section) else { return nil }
        return ItemPath(section: section, item: path.item)
    }
}

