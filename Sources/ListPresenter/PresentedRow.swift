import ListDiff

/// A row the presenter shows: one of the model's items, or a state block (a loading row, an error
/// row with retry, an empty-state row). Cells switch over it.
///
/// ```swift
/// import ListDiff
/// import ListPresenter
///
/// @MainActor
/// func configure(_ cell: Cell, at path: ItemPath, of presenter: ListPresenter<Day, Row>) {
///     switch presenter.displayed[path] {
///     case .item(let message): configure(cell, with: message)
///     case .block(let block): configure(cell, with: block)
///     }
/// }
/// ```
public enum PresentedRow<SectionModel: ListElement, Item: ListElement>: ListElement {
    /// A row of the model.
    case item(Item)
    /// A row that shows a load state.
    case block(StateBlock<SectionModel.ID>)

    /// Item rows keep their item's identity; blocks are identified by where they are and what
    /// they say, so that a loading row turning into an error row animates as a change.
    public enum ID: Hashable {
        case item(Item.ID)
        case block(StateBlock<SectionModel.ID>.Scope, StateBlock<SectionModel.ID>.Kind)
    }

    @inlinable
    public var id: ID {
        switch self {
        case let .item(item): .item(item.id)
        case let .block(block): .block(block.scope, block.kind)
        }
    }

    /// The model item, if this row is one.
    @inlinable
    public var item: Item? {
        if case let .item(item) = self { return item }
        return nil
    }

    @inlinable
    public func isContentEqual(to other: PresentedRow) -> Bool {
        switch (self, other) {
        case let (.item(lhs), .item(rhs)): lhs.isContentEqual(to: rhs)
        case let (.block(lhs), .block(rhs)): lhs.message == rhs.message
        default: false
        }
    }
}

/// A row that presents a load state inline, where the content it stands for would be.
public struct StateBlock<SectionID: Hashable> {
    /// Whose state the block shows.
    public enum Scope: Hashable {
        /// The whole list.
        case list
        /// One section.
        case section(SectionID)
    }

    /// What the block shows.
    public enum Kind: Hashable, Sendable {
        case loading, failed, empty
    }

    /// Whose state it is.
    public var scope: Scope
    /// Which state.
    public var kind: Kind
    /// The error message of a failed block.
    public var message: String?
    /// Runs the failed load again (failed blocks only).
    public var retry: (@Sendable () -> Void)?

    /// Creates a block.
    @inlinable
    public init(scope: Scope, kind: Kind, message: String? = nil, retry: (@Sendable () -> Void)? = nil) {
        self.scope = scope
        self.kind = kind
        self.message = message
        self.retry = retry
    }
}

/// A section the presenter shows: one of the model's sections, or the list-level status section
/// that holds the list's own state block.
public enum PresentedSection<SectionModel: ListElement>: ListElement {
    /// A section of the model.
    case section(SectionModel)
    /// The section on top that holds the list's state row.
    case listStatus

    /// Model sections keep their identity; the status section has its own.
    public enum ID: Hashable {
        case section(SectionModel.ID)
        case listStatus
    }

    @inlinable
    public var id: ID {
        switch self {
        case let .section(model): .section(model.id)
        case .listStatus: .listStatus
        }
    }

    /// The model section, if this is one.
    @inlinable
    public var model: SectionModel? {
        if case let .section(model) = self { return model }
        return nil
    }

    @inlinable
    public func isContentEqual(to other: PresentedSection) -> Bool {
        switch (self, other) {
        case let (.section(lhs), .section(rhs)): lhs.isContentEqual(to: rhs)
        case (.listStatus, .listStatus): true
        default: false
        }
    }
}

extension StateBlock: Sendable where SectionID: Sendable {}
extension StateBlock.Scope: Sendable where SectionID: Sendable {}
