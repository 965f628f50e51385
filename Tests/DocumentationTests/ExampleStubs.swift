import ListDiff
import ListPresenter

// What the documented examples call as the app's own code: a cell to configure, and the views to
// show for a load state. Not an example itself (`Examples/` holds those, one block a file).

final class Cell {}

func configure(_ cell: Cell, with message: VersionedItem<Int64, Int>) {}
func configure(_ cell: Cell, with block: StateBlock<String>) {}

func showSpinner() {}
func showRows() {}
func showEmptyMessage() {}
func showError(_ message: String, retry: @escaping @Sendable () -> Void) {}
func showPlaceholders() {}
func showShimmer() {}
func showRetry(_ message: String, _ retry: @escaping @Sendable () -> Void) {}

@MainActor func reconfigure(_ ids: [Int64]) {}
