import ListTesting

/// One line of the demo's list, whatever the list's source: what ``DemoScreen`` draws.
enum DemoLine {
    /// A section's header.
    case header(String)
    /// A conversation with its record.
    case conversation(InboxDatabase.Conversation, mark: DemoMark?, isSelected: Bool, isCursor: Bool)
    /// A row whose record is not loaded yet (or failed to load).
    case placeholder(id: String, failed: Bool, isCursor: Bool)
    /// The list's or a section's state rows.
    case loading
    case failed(String)
    case empty
}

/// What just happened to a row, shown for a moment in its gutter.
enum DemoMark { case inserted, moved, updated, pending }

/// A list the demo shows and drives, local (``DemoSession``) or remote (``RemoteDemoSession``):
/// the terminal screen and the headless script use only this.
@MainActor
protocol DemoListSession: AnyObject {
    var sort: DemoSort { get }
    var filter: String { get }
    var batches: Int { get }
    var changes: Int { get }
    /// From each commit to its changes on the screen, in milliseconds.
    var statusCounts: (p50: Double, p99: Double) { get }
    /// The main actor's work for each update, in milliseconds.
    var mainCounts: (p50: Double, p99: Double) { get }
    var lastFailure: String? { get }
    var viewportRows: Int { get set }
    var contentOffset: Int { get }
    var maximumContentOffset: Int { get }
    func setContentOffset(_ offset: Int)
    /// Applies what arrived since the last call; one line per batch.
    func applyEvents() -> [String]
    func requestVisibleRows()
    func setCriteria(sort: DemoSort, filter: String)
    /// Moves the keyboard cursor by `delta` rows and scrolls to keep it in view.
    func moveCursor(by delta: Int)
    /// Selects or deselects the row under the cursor.
    func toggleSelectionAtCursor()
    /// Selects a random visible row (the headless script).
    func selectVisibleRow(using random: inout SeededRandomNumberGenerator)
    /// The lines of the viewport, headers included.
    func visibleLines(now: ContinuousClock.Instant) -> [DemoLine]
    /// The status line's figures after the row count.
    func statusDetails(now: ContinuousClock.Instant) -> String
    /// What the last action on a row came to (sent, applied, refused…), for the status line.
    var lastAction: String? { get }
    /// Puts the cursor on a random row in view whose content is loaded (the headless script).
    func moveCursorToLoadedRow(using random: inout SeededRandomNumberGenerator)
    /// Archives the conversation under the cursor (`e`).
    func archiveAtCursor()
    /// Marks the conversation under the cursor read, or unread (`u`).
    func toggleUnreadAtCursor()
    /// Sends a new conversation (`c`).
    func send(subject: String)
    /// Waits for what is in flight and says what is inconsistent (empty: nothing); the view's
    /// batch-rule violations and stale cells included.
    func finalCheck() throws -> [String]
}
