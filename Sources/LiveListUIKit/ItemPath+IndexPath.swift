#if (canImport(UIKit) && !os(watchOS)) || canImport(AppKit)
import Foundation
import ListDiff

extension IndexPath {
    /// The index path UIKit and AppKit use for `path` (section, then item or row).
    init(_ path: ItemPath) {
        self.init(indexes: [path.section, path.item])
    }
}

extension ItemPath {
    /// The path of `indexPath` (section, then item or row).
    init(_ indexPath: IndexPath) {
        self.init(section: indexPath[0], item: indexPath[1])
    }
}
#endif
