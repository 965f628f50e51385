import ListDiff

/// An element of a counted tree: rows weigh 1, sections weigh their row count, so the tree
/// answers both "the n-th element" and "the element that holds the n-th unit of weight".
protocol TreeElement: Sendable {
    var weight: Int { get }
}

/// How a tree orders its elements: negative, zero or positive as `lhs` sorts before, with or
/// after `rhs`. Zero means "the same element" (rows break ties by identity).
protocol TreeOrder {
    associatedtype Element
    func compare(_ lhs: Element, _ rhs: Element) -> Int
}

/// Hears which leaf each element lands in when leaves split or merge, so that an index from
/// row identity to leaf stays right.
protocol LeafTracker {
    associatedtype Element
    mutating func element(_ element: Element, movedTo leaf: UInt32)
}

struct NoLeafTracker<Element>: LeafTracker {
    // A byte of storage: an empty struct would share one address between threads, which the
    // thread sanitizer reports as a race on every `inout` use.
    private var unused: UInt8 = 0
    @inline(__always) func element(_ element: Element, movedTo leaf: UInt32) {}
}

/// Hands out epochs: a node belongs to the tree whose epoch it carries and may be changed in
/// place only by it; freezing the tree (`FrozenTree`) moves it to a new epoch, so every node a
/// frozen tree can reach is never written again.
enum Epoch {
    private static let last = Locked<UInt64>(0)

    static func next() -> UInt64 {
        last.withLock { last in
            last += 1
            return last
        }
    }
}

// Node classes: written only while their epoch is their tree's current epoch, which no frozen
// tree can reach (see `Epoch`); read-only afterwards, from any thread.
final class TreeLeaf<Element: Sendable>: @unchecked Sendable {
    let epoch: UInt64
    let id: UInt32
    var elements: [Element]
    var weight: Int

    init(epoch: UInt64, id: UInt32, elements: [Element], weight: Int) {
        self.epoch = epoch
        self.id = id
        self.elements = elements
        self.weight = weight
    }
}

final class TreeBranch<Element: Sendable>: @unchecked Sendable {
    let epoch: UInt64
    var children: [TreeNode<Element>]
    /// Elements under each child.
    var counts: [Int]
    /// Weight under each child.
    var weights: [Int]
    /// The last element under each child: the separators a search compares with.
    var lasts: [Element]

    init(epoch: UInt64, children: [TreeNode<Element>], counts: [Int], weights: [Int], lasts: [Element]) {
        self.epoch = epoch
        self.children = children
        self.counts = counts
        self.weights = weights
        self.lasts = lasts
    }

    var count: Int { counts.reduce(0, +) }
    var weight: Int { weights.reduce(0, +) }

    /// The child whose range holds `probe` (the first whose last element is not before it; the
    /// last child otherwise), and how many elements come before that child.
    func child<Order: TreeOrder>(holding probe: Element, order: Order) -> (index: Int, position: Int) where Order.Element == Element {
        var low = 0, high = children.count - 1
        while low < high {
            let middle = (low + high) >> 1
            if order.compare(lasts[middle], probe) < 0 { low = middle + 1 } else { high = middle }
        }
        return (low, counts[..<low].reduce(0, +))
    }

    /// Puts `node` at `index` with its count, weight and last element.
    func setChild(_ node: TreeNode<Element>, at index: Int) {
        children[index] = node
        counts[index] = node.count
        weights[index] = node.weight
        if let last = node.last { lasts[index] = last }
    }

    func removeChild(at index: Int) {
        children.remove(at: index)
        counts.remove(at: index)
        weights.remove(at: index)
        lasts.remove(at: index)
    }
}

extension TreeLeaf {
    /// The index of the first element not before `probe`.
    func lowerBound<Order: TreeOrder>(of probe: Element, order: Order) -> Int where Order.Element == Element {
        var low = 0, high = elements.count
        while low < high {
            let middle = (low + high) >> 1
            if order.compare(elements[middle], probe) < 0 { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

enum TreeNode<Element: Sendable>: Sendable {
    case leaf(TreeLeaf<Element>)
    case branch(TreeBranch<Element>)

    /// The node's object, to tell shared nodes from copies.
    var identifier: ObjectIdentifier {
        switch self {
        case let .leaf(leaf): ObjectIdentifier(leaf)
        case let .branch(branch): ObjectIdentifier(branch)
        }
    }

    var count: Int {
        switch self {
        case let .leaf(leaf): leaf.elements.count
        case let .branch(branch): branch.count
        }
    }

    var weight: Int {
        switch self {
        case let .leaf(leaf): leaf.weight
        case let .branch(branch): branch.weight
        }
    }

    var isLeaf: Bool {
        if case .leaf = self { return true }
        return false
    }

    var last: Element? {
        switch self {
        case let .leaf(leaf): leaf.elements.last
        case let .branch(branch): branch.lasts.last
        }
    }
}

/// An immutable state of a counted tree: what a published result holds. Reads are O(log n).
///
/// `@unchecked Sendable`: every node it reaches belongs to an epoch the tree has left (`Epoch`),
/// so no thread writes them again; reads from any thread need no lock.
struct FrozenTree<Element: TreeElement>: @unchecked Sendable {
    // Only ever reads nodes of past epochs, which nothing writes (see `Epoch`).
    let root: TreeNode<Element>
    let count: Int
    let weight: Int

    /// The element at `position` (0 ..< count).
    func element(at position: Int) -> Element {
        var node = root
        var remaining = position
        while true {
            switch node {
            case let .leaf(leaf):
                return leaf.elements[remaining]
            case let .branch(branch):
                var index = 0
                while remaining >= branch.counts[index] {
                    remaining -= branch.counts[index]
                    index += 1
                }
                node = branch.children[index]
            }
        }
    }

    /// The element holding weight unit `unit` (0 ..< weight), its position, and the weight of
    /// the elements before it.
    func element(holdingWeight unit: Int) -> (element: Element, position: Int, weightBefore: Int) {
        var node = root
        var remaining = unit, position = 0, before = 0
        while true {
            switch node {
            case let .leaf(leaf):
                for (index, element) in leaf.elements.enumerated() {
                    if remaining < element.weight { return (element, position + index, before) }
                    remaining -= element.weight
                    before += element.weight
                }
                // Only reached for an out-of-range unit: answer with the last element.
                let last = leaf.elements.count - 1
                return (leaf.elements[last], position + last, before - leaf.elements[last].weight)
            case let .branch(branch):
                var index = 0
                while index < branch.children.count - 1 && remaining >= branch.weights[index] {
                    remaining -= branch.weights[index]
                    before += branch.weights[index]
                    position += branch.counts[index]
                    index += 1
                }
                node = branch.children[index]
            }
        }
    }

    /// The total weight of the elements before `position`.
    func weight(before position: Int) -> Int {
        var node = root
        var remaining = position, total = 0
        while true {
            switch node {
            case let .leaf(leaf):
                for index in 0..<min(remaining, leaf.elements.count) { total += leaf.elements[index].weight }
                return total
            case let .branch(branch):
                var index = 0
                while index < branch.children.count && remaining >= branch.counts[index] {
                    remaining -= branch.counts[index]
                    total += branch.weights[index]
                    index += 1
                }
                guard index < branch.children.count else { return total }
                node = branch.children[index]
            }
        }
    }

    /// The position of the first element not before `probe`, and whether it is `probe` itself.
    func lowerBound<Order: TreeOrder>(of probe: Element, order: Order) -> (position: Int, found: Bool) where Order.Element == Element {
        var node = root
        var position = 0
        while true {
            switch node {
            case let .leaf(leaf):
                let low = leaf.lowerBound(of: probe, order: order)
                let found = low < leaf.elements.count && order.compare(leaf.elements[low], probe) == 0
                return (position + low, found)
            case let .branch(branch):
                let (index, before) = branch.child(holding: probe, order: order)
                position += before
                node = branch.children[index]
            }
        }
    }

    /// Calls `body` with the elements at `range`, in order, until it returns `false`.
    func forEach(in range: Range<Int>, _ body: (Element) -> Bool) {
        guard !range.isEmpty else { return }
        _ = Self.visit(root, offset: 0, range: range, body)
    }

    /// The bytes of this state's nodes that `newer` (a later state of the same tree) does not
    /// share: what keeping this state costs beside `newer`. Nodes are compared by identity,
    /// child by child where both states have a branch; element payloads held elsewhere (text,
    /// arrays) are not counted.
    ///
    /// - Complexity: O(c · branchCapacity) for c nodes not shared.
    func bytesNotShared(with newer: FrozenTree<Element>) -> Int {
        Self.bytesNotShared(root, newer.root)
    }

    /// The bytes of every node of this state.
    var bytes: Int { Self.bytesNotShared(root, nil) }

    private static func bytesNotShared(_ old: TreeNode<Element>, _ new: TreeNode<Element>?) -> Int {
        switch (old, new) {
        case let (.leaf(a), .leaf(b)) where a === b: return 0
        case let (.branch(a), .branch(b)) where a === b: return 0
        case let (.leaf(leaf), _): return bytes(of: leaf)
        case let (.branch(branch), newNode):
            var total = bytes(of: branch)
            var newChildren: [TreeNode<Element>] = []
            var shared = Set<ObjectIdentifier>()
            if case let .branch(newBranch)? = newNode {
                newChildren = newBranch.children
                for child in newChildren { shared.insert(child.identifier) }
            }
            for (index, child) in branch.children.enumerated() where !shared.contains(child.identifier) {
                total += bytesNotShared(child, index < newChildren.count ? newChildren[index] : nil)
            }
            return total
        }
    }

    private static func bytes(of leaf: TreeLeaf<Element>) -> Int {
        48 + leaf.elements.capacity * MemoryLayout<Element>.stride
    }

    private static func bytes(of branch: TreeBranch<Element>) -> Int {
        let perChild = MemoryLayout<TreeNode<Element>>.stride + 2 * MemoryLayout<Int>.stride + MemoryLayout<Element>.stride
        return 48 + 4 * 32 + branch.children.capacity * perChild
    }

    /// Every node of the tree, leaves and branches (what two states share, and what not).
    ///
    /// - Complexity: O(n / leafCapacity).
    var nodeIdentifiers: Set<ObjectIdentifier> {
        var found = Set<ObjectIdentifier>()
        func collect(_ node: TreeNode<Element>) {
            found.insert(node.identifier)
            if case let .branch(branch) = node { for child in branch.children { collect(child) } }
        }
        collect(root)
        return found
    }

    private static func visit(_ node: TreeNode<Element>, offset: Int, range: Range<Int>, _ body: (Element) -> Bool) -> Bool {
        switch node {
        case let .leaf(leaf):
            let from = max(range.lowerBound - offset, 0), to = min(range.upperBound - offset, leaf.elements.count)
            guard from < to else { return true }
            for index in from..<to where !body(leaf.elements[index]) { return false }
            return true
        case let .branch(branch):
            var start = offset
            for (index, child) in branch.children.enumerated() {
                let end = start + branch.counts[index]
                if end > range.lowerBound && start < range.upperBound {
                    if !visit(child, offset: start, range: range, body) { return false }
                }
                if end >= range.upperBound { break }
                start = end
            }
            return true
        }
    }
}

/// A persistent counted B+tree, mutated in place by its one owner (a live query's writer queue)
/// and published as immutable ``FrozenTree``s that share every untouched node.
///
/// Position of an element, element at a position, insertion and removal are O(log n) (leaves of
/// `leafCapacity` elements, branches of `branchCapacity` children); the first write to a node after
/// a publication copies that node (O(capacity)), never the tree.
struct CountedTree<Element: TreeElement> {
    static var leafCapacity: Int { 256 }
    static var branchCapacity: Int { 64 }

    private(set) var root: TreeNode<Element>
    private(set) var epoch: UInt64
    /// The current version of each leaf, by id (leaves keep their id when copied).
    private var leaves: [TreeLeaf<Element>?] = []
    private var freeLeafIDs: [UInt32] = []

    /// A tree holding `elements`, which must already be in the tree's order; leaves are filled
    /// completely (a freshly built index takes the least memory).
    init<Tracker: LeafTracker>(sorted elements: [Element], tracker: inout Tracker) where Tracker.Element == Element {
        var chunks: [[Element]] = []
        var start = 0
        repeat {
            let end = min(start + Self.leafCapacity, elements.count)
            chunks.append(Array(elements[start..<end]))
            start = end
        } while start < elements.count
        self.init(leaves: chunks, tracker: &tracker)
    }

    /// A tree whose leaves hold `chunks`, in order (each at most `leafCapacity`, none empty
    /// unless it is the only one).
    init<Tracker: LeafTracker>(leaves chunks: [[Element]], tracker: inout Tracker) where Tracker.Element == Element {
        epoch = Epoch.next()
        var nodes: [TreeNode<Element>] = []
        nodes.reserveCapacity(chunks.count)
        for chunk in chunks {
            let id = UInt32(leaves.count)
            let leaf = TreeLeaf(epoch: epoch, id: id, elements: chunk, weight: chunk.reduce(0) { $0 + $1.weight })
            leaves.append(leaf)
            for element in chunk { tracker.element(element, movedTo: id) }
            nodes.append(.leaf(leaf))
        }
        if nodes.isEmpty {
            let leaf = TreeLeaf<Element>(epoch: epoch, id: 0, elements: [], weight: 0)
            leaves.append(leaf)
            nodes.append(.leaf(leaf))
        }
        while nodes.count > 1 {
            var parents: [TreeNode<Element>] = []
            var index = 0
            while index < nodes.count {
                let group = Array(nodes[index..<min(index + Self.branchCapacity, nodes.count)])
                parents.append(.branch(Self.makeBranch(epoch: epoch, group)))
                index += group.count
            }
            nodes = parents
        }
        root = nodes[0]
    }

    init(sorted elements: [Element]) {
        var tracker = NoLeafTracker<Element>()
        self.init(sorted: elements, tracker: &tracker)
    }

    private static func makeBranch(epoch: UInt64, _ children: [TreeNode<Element>]) -> TreeBranch<Element> {
        TreeBranch(
            epoch: epoch, children: children, counts: children.map(\.count), weights: children.map(\.weight),
            lasts: children.compactMap(\.last))
    }

    var count: Int { root.count }

    /// An immutable view of the tree now. Later changes copy what they touch.
    mutating func publish() -> FrozenTree<Element> {
        let frozen = FrozenTree(root: root, count: root.count, weight: root.weight)
        epoch = Epoch.next()
        return frozen
    }

    /// A read-only view of the current state for queries between changes; it must not outlive
    /// the next change (use ``publish()`` to keep one).
    var current: FrozenTree<Element> { FrozenTree(root: root, count: root.count, weight: root.weight) }

    /// The current version of leaf `id`.
    func leaf(_ id: UInt32) -> TreeLeaf<Element>? {
        Int(id) < leaves.count ? leaves[Int(id)] : nil
    }

    // MARK: - Owning nodes

    private mutating func owned(_ leaf: TreeLeaf<Element>) -> TreeLeaf<Element> {
        if leaf.epoch == epoch { return leaf }
        let copy = TreeLeaf(epoch: epoch, id: leaf.id, elements: leaf.elements, weight: leaf.weight)
        leaves[Int(leaf.id)] = copy
        return copy
    }

    private func owned(_ branch: TreeBranch<Element>) -> TreeBranch<Element> {
        if branch.epoch == epoch { return branch }
        return TreeBranch(epoch: epoch, children: branch.children, counts: branch.counts, weights: branch.weights, lasts: branch.lasts)
    }

    private mutating func newLeafID() -> UInt32 {
        if let id = freeLeafIDs.popLast() { return id }
        leaves.append(nil)
        return UInt32(leaves.count - 1)
    }

    private mutating func retire(_ leaf: TreeLeaf<Element>) {
        leaves[Int(leaf.id)] = nil
        freeLeafIDs.append(leaf.id)
    }

    // MARK: - Insertion

    /// Inserts `element` at its place in `order` and returns its position.
    @discardableResult
    mutating func insert<Order: TreeOrder, Tracker: LeafTracker>(
        _ element: Element, order: Order, tracker: inout Tracker
    ) -> Int where Order.Element == Element, Tracker.Element == Element {
        let (node, position, split) = insert(element, into: root, order: order, tracker: &tracker)
        if let split {
            root = .branch(Self.makeBranch(epoch: epoch, [node, split]))
        } else {
            root = node
        }
        return position
    }

    private mutating func insert<Order: TreeOrder, Tracker: LeafTracker>(
        _ element: Element, into node: TreeNode<Element>, order: Order, tracker: inout Tracker
    ) -> (node: TreeNode<Element>, position: Int, split: TreeNode<Element>?) where Order.Element == Element, Tracker.Element == Element {
        switch node {
        case let .leaf(shared):
            let leaf = owned(shared)
            let low = leaf.lowerBound(of: element, order: order)
            leaf.elements.insert(element, at: low)
            leaf.weight += element.weight
            tracker.element(element, movedTo: leaf.id)
            guard leaf.elements.count > Self.leafCapacity else { return (.leaf(leaf), low, nil) }
            let half = leaf.elements.count / 2
            let upper = Array(leaf.elements[half...])
            leaf.elements.removeSubrange(half...)
            let upperWeight = upper.reduce(0) { $0 + $1.weight }
            leaf.weight -= upperWeight
            let sibling = TreeLeaf(epoch: epoch, id: newLeafID(), elements: upper, weight: upperWeight)
            leaves[Int(sibling.id)] = sibling
            for moved in upper { tracker.element(moved, movedTo: sibling.id) }
            return (.leaf(leaf), low, .leaf(sibling))
        case let .branch(shared):
            let branch = owned(shared)
            let (low, position) = branch.child(holding: element, order: order)
            let (child, offset, split) = insert(element, into: branch.children[low], order: order, tracker: &tracker)
            branch.setChild(child, at: low)
            if let split {
                branch.children.insert(split, at: low + 1)
                branch.counts.insert(split.count, at: low + 1)
                branch.weights.insert(split.weight, at: low + 1)
                if let last = split.last { branch.lasts.insert(last, at: low + 1) }
            }
            guard branch.children.count > Self.branchCapacity else { return (.branch(branch), position + offset, nil) }
            let half = branch.children.count / 2
            let sibling = TreeBranch(
                epoch: epoch, children: Array(branch.children[half...]), counts: Array(branch.counts[half...]),
                weights: Array(branch.weights[half...]), lasts: Array(branch.lasts[half...]))
            branch.children.removeSubrange(half...)
            branch.counts.removeSubrange(half...)
            branch.weights.removeSubrange(half...)
            branch.lasts.removeSubrange(half...)
            return (.branch(branch), position + offset, .branch(sibling))
        }
    }

    // MARK: - Removal and replacement

    /// Removes `element` and returns the position it had, or `nil` when it is not in the tree.
    @discardableResult
    mutating func remove<Order: TreeOrder, Tracker: LeafTracker>(
        _ element: Element, order: Order, tracker: inout Tracker
    ) -> Int? where Order.Element == Element, Tracker.Element == Element {
        guard current.lowerBound(of: element, order: order).found else { return nil }
        let (node, position) = remove(element, from: root, order: order, tracker: &tracker)
        root = node
        // A root branch with one child hands the root down, so the height follows the count.
        while case let .branch(branch) = root, branch.children.count == 1 { root = branch.children[0] }
        return position
    }

    private mutating func remove<Order: TreeOrder, Tracker: LeafTracker>(
        _ element: Element, from node: TreeNode<Element>, order: Order, tracker: inout Tracker
    ) -> (node: TreeNode<Element>, position: Int) where Order.Element == Element, Tracker.Element == Element {
        switch node {
        case let .leaf(shared):
            let leaf = owned(shared)
            let low = leaf.lowerBound(of: element, order: order)
            leaf.weight -= leaf.elements[low].weight
            leaf.elements.remove(at: low)
            return (.leaf(leaf), low)
        case let .branch(shared):
            let branch = owned(shared)
            let (low, position) = branch.child(holding: element, order: order)
            let (child, offset) = remove(element, from: branch.children[low], order: order, tracker: &tracker)
            branch.setChild(child, at: low)
            rebalance(branch, at: low, tracker: &tracker)
            return (.branch(branch), position + offset)
        }
    }

    /// Keeps nodes from thinning out under deletions: an empty child is dropped, a child under a
    /// quarter of its capacity is merged into a neighbour of its kind when both fit in three quarters.
    private mutating func rebalance<Tracker: LeafTracker>(_ branch: TreeBranch<Element>, at index: Int, tracker: inout Tracker)
    where Tracker.Element == Element {
        let (size, capacity) = Self.fill(of: branch.children[index])
        if size == 0 {
            guard branch.children.count > 1 else { return }
            if case let .leaf(leaf) = branch.children[index] { retire(leaf) }
            branch.removeChild(at: index)
            return
        }
        guard size < capacity / 4 else { return }
        for neighbour in [index - 1, index + 1] where branch.children.indices.contains(neighbour) {
            let other = Self.fill(of: branch.children[neighbour])
            guard branch.children[neighbour].isLeaf == branch.children[index].isLeaf, other.size + size <= capacity * 3 / 4 else { continue }
            let (left, right) = neighbour < index ? (neighbour, index) : (index, neighbour)
            guard let merged = merge(branch.children[left], branch.children[right], tracker: &tracker) else { return }
            branch.setChild(merged, at: left)
            branch.removeChild(at: right)
            return
        }
    }

    /// How full a node is: elements of a leaf, children of a branch, against the capacity.
    private static func fill(of node: TreeNode<Element>) -> (size: Int, capacity: Int) {
        switch node {
        case let .leaf(leaf): (leaf.elements.count, leafCapacity)
        case let .branch(branch): (branch.children.count, branchCapacity)
        }
    }

    /// `right`'s content appended to (a copy of) `left`, both of one kind; `right` is retired.
    private mutating func merge<Tracker: LeafTracker>(_ left: TreeNode<Element>, _ right: TreeNode<Element>, tracker: inout Tracker)
    -> TreeNode<Element>? where Tracker.Element == Element {
        switch (left, right) {
        case let (.leaf(leftShared), .leaf(rightLeaf)):
            let leftLeaf = owned(leftShared)
            leftLeaf.elements.append(contentsOf: rightLeaf.elements)
            leftLeaf.weight += rightLeaf.weight
            for moved in rightLeaf.elements { tracker.element(moved, movedTo: leftLeaf.id) }
            retire(rightLeaf)
            return .leaf(leftLeaf)
        case let (.branch(leftShared), .branch(rightBranch)):
            let leftBranch = owned(leftShared)
            leftBranch.children += rightBranch.children
            leftBranch.counts += rightBranch.counts
            leftBranch.weights += rightBranch.weights
            leftBranch.lasts += rightBranch.lasts
            return .branch(leftBranch)
        default:
            return nil
        }
    }

    /// Replaces `old` with `new`, which must sit at the same place in `order` (a section whose
    /// count changed, a row whose content changed but not its sort values).
    mutating func replace<Order: TreeOrder>(_ old: Element, with new: Element, order: Order) where Order.Element == Element {
        root = replace(old, with: new, in: root, order: order)
    }

    private mutating func replace<Order: TreeOrder>(
        _ old: Element, with new: Element, in node: TreeNode<Element>, order: Order
    ) -> TreeNode<Element> where Order.Element == Element {
        switch node {
        case let .leaf(shared):
            let leaf = owned(shared)
            let low = leaf.lowerBound(of: old, order: order)
            guard low < leaf.elements.count else { return .leaf(leaf) }
            leaf.weight += new.weight - leaf.elements[low].weight
            leaf.elements[low] = new
            return .leaf(leaf)
        case let .branch(shared):
            let branch = owned(shared)
            let low = branch.child(holding: old, order: order).index
            branch.setChild(replace(old, with: new, in: branch.children[low], order: order), at: low)
            return .branch(branch)
        }
    }
}
