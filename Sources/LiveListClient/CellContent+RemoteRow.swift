import ListPresenter

extension CellContent where Item == RemoteRow {
    /// Whether the cell shows a row of the app's pending change (``RemoteRow/isPending``, read
    /// from the row the cell was given, at its version); `false` for a state row.
    public var isPending: Bool { item?.isPending ?? false }
}
