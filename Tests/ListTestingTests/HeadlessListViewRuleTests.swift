import ListDiff
import ListTesting
import Testing

private typealias Row = VersionedItem<Int, Int>
private typealias Header = VersionedItem<Int, Int>
private typealias Snapshot = ListSnapshot<Header, Row>

/// A snapshot from item identifiers per section; section `s` has identity `s + 1000`.
private func snapshot(_ sections: [[Int]]) -> Snapshot {
    Snapshot(sections: sections.enumerated().map { index, ids in
        SnapshotSection(Header(id: index + 1000), items: ids.map { Row(id: $0) })
    })
}

@MainActor
private func loadedView(_ sections: [[Int]], kind: HeadlessListView<Row, Header>.Kind = .collectionView, strict: Bool = true)
    -> (HeadlessListView<Row, Header>, SnapshotDataSource<Header, Row>)
{
    let dataSource = SnapshotDataSource(snapshot(sections))
    let view = HeadlessListView(dataSource: dataSource, kind: kind, isStrict: strict, viewportRows: 3)
    view.layoutIfNeeded()
    return (view, dataSource)
}

/// Runs one batch that switches the data source to `after` and records `operations`.
@MainActor
private func batch(
    _ view: HeadlessListView<Row, Header>, _ dataSource: SnapshotDataSource<Header, Row>, to after: Snapshot,
    _ operations: (HeadlessListView<Row, Header>) throws(BatchUpdateViolation) -> Void
) throws(BatchUpdateViolation) {
    try view.performBatchUpdates { () throws(BatchUpdateViolation) in
        dataSource.snapshot = after
        try operations(view)
    }
}

/// Expects exactly `violation` from one batch.
@MainActor
private func expectViolation(
    _ violation: BatchUpdateViolation, from sections: [[Int]], to after: [[Int]], strict: Bool = true,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ operations: (HeadlessListView<Row, Header>) throws(BatchUpdateViolation) -> Void
) {
    let (view, dataSource) = loadedView(sections, strict: strict)
    #expect(throws: violation, sourceLocation: sourceLocation) {
        try batch(view, dataSource, to: snapshot(after), operations)
    }
}

private func path(_ section: Int, _ item: Int) -> ItemPath { ItemPath(section: section, item: item) }

@MainActor
struct HeadlessListViewRuleTests {
    @Test("§1.1–1.4: deletes use old indices, inserts new ones, call order is irrelevant, survivors keep order")
    func indexConventionsAndFinalState() throws {
        let (view, dataSource) = loadedView([[1, 2, 3, 4]])
        try batch(view, dataSource, to: snapshot([[5, 2, 4, 1]])) { view throws(BatchUpdateViolation) in
            try view.insertItems(at: [path(0, 0)])
            try view.moveItem(at: path(0, 0), to: path(0, 3))
            try view.deleteItems(at: [path(0, 2)])
        }
        #expect(view.staleCells().isEmpty)
        #expect((0..<4).compactMap { view.cellContent(at: path(0, $0))?.id } == [5, 2, 4, 1])
    }

    @Test("§1.4: a moved section carries its items")
    func movedSectionCarriesItems() throws {
        let (view, dataSource) = loadedView([[1], [2, 3], [4]])
        let after = Snapshot(sections: [dataSource.snapshot.sections[1], dataSource.snapshot.sections[0], dataSource.snapshot.sections[2]])
        try batch(view, dataSource, to: after) { view throws(BatchUpdateViolation) in try view.moveSection(1, toSection: 0) }
        #expect(view.staleCells().isEmpty)
    }

    @Test("§1.6: nested batches count as one")
    func nestedBatchesAreOne() throws {
        let (view, dataSource) = loadedView([[1, 2]])
        try view.performBatchUpdates { () throws(BatchUpdateViolation) in
            dataSource.snapshot = snapshot([[2, 3]])
            try view.performBatchUpdates { () throws(BatchUpdateViolation) in try view.deleteItems(at: [path(0, 0)]) }
            try view.insertItems(at: [path(0, 1)])
        }
        #expect(view.batchCount == 1)
        #expect(view.staleCells().isEmpty)
    }

    @Test("§1.6: reloadData inside a batch raises")
    func reloadDataInsideBatch() {
        let (view, _) = loadedView([[1]])
        #expect(throws: BatchUpdateViolation.reloadDataInsideBatch) {
            try view.performBatchUpdates { () throws(BatchUpdateViolation) in try view.reloadData() }
        }
    }

    @Test("§1.6: a collection-view batch right after reloadData raises in strict mode; a table view accepts it")
    func batchRightAfterReloadData() throws {
        let (collection, _) = loadedView([[1]])
        try collection.reloadData()
        #expect(throws: BatchUpdateViolation.batchRightAfterReloadData) {
            try collection.performBatchUpdates { () throws(BatchUpdateViolation) in }
        }
        let (table, tableSource) = loadedView([[1]], kind: .tableView)
        try table.reloadData()
        try batch(table, tableSource, to: snapshot([[1, 2]])) { view throws(BatchUpdateViolation) in try view.insertItems(at: [path(0, 1)]) }
        #expect(table.staleCells().isEmpty)
    }

    @Test("§2.1: section count must add up")
    func sectionCountMismatch() {
        expectViolation(.sectionCountMismatch(before: 1, after: 2, inserted: 0, deleted: 0), from: [[1]], to: [[1], []]) { _ throws(BatchUpdateViolation) in }
    }

    @Test("§2.2: item count must add up in surviving sections")
    func itemCountMismatch() {
        expectViolation(.itemCountMismatch(section: 0, before: 2, after: 3, inserted: 0, deleted: 1, movedIn: 0, movedOut: 0),
                        from: [[1, 2]], to: [[1, 3, 4]]) { view throws(BatchUpdateViolation) in try view.deleteItems(at: [path(0, 1)]) }
    }

    @Test("§2.3: indices out of range raise, in the state each operation refers to")
    func outOfRange() {
        expectViolation(.itemOutOfRange(.delete, path: path(0, 2), sectionCount: 1, itemCount: 2), from: [[1, 2]], to: [[1]]) { view throws(BatchUpdateViolation) in
            try view.deleteItems(at: [path(0, 2)])
        }
        expectViolation(.itemOutOfRange(.insert, path: path(0, 3), sectionCount: 1, itemCount: 3), from: [[1, 2]], to: [[1, 2, 3]]) { view throws(BatchUpdateViolation) in
            try view.insertItems(at: [path(0, 3)])
        }
        expectViolation(.sectionOutOfRange(.delete, section: 1, count: 1), from: [[1]], to: []) { view throws(BatchUpdateViolation) in
            try view.deleteSections([1])
        }
        expectViolation(.sectionOutOfRange(.moveDestination, section: 2, count: 2), from: [[1], [2]], to: [[2], [1]]) { view throws(BatchUpdateViolation) in
            try view.moveSection(0, toSection: 2)
        }
    }

    @Test("§2.4: delete and move of the same old path")
    func deleteAndMove() {
        expectViolation(.itemDeletedAndMoved(path(0, 0)), from: [[1, 2]], to: [[2]]) { view throws(BatchUpdateViolation) in
            try view.deleteItems(at: [path(0, 0)])
            try view.moveItem(at: path(0, 0), to: path(0, 0))
        }
        expectViolation(.sectionDeletedAndMoved(0), from: [[1], [2]], to: [[2]]) { view throws(BatchUpdateViolation) in
            try view.deleteSections([0])
            try view.moveSection(0, toSection: 0)
        }
    }

    @Test("§2.5: insert and move to the same new path, item and section form")
    func insertAndMoveToSamePath() {
        expectViolation(.itemInsertedAndMovedTo(path(0, 1)), from: [[1, 2]], to: [[2, 1, 3]]) { view throws(BatchUpdateViolation) in
            try view.insertItems(at: [path(0, 1)])
            try view.moveItem(at: path(0, 0), to: path(0, 1))
        }
        expectViolation(.sectionInsertedAndMovedTo(0), from: [[1], [2]], to: [[3], [1], [2]]) { view throws(BatchUpdateViolation) in
            try view.insertSections([0])
            try view.moveSection(1, toSection: 0)
        }
    }

    @Test("§2.6: delete and reload of the same old path")
    func deleteAndReload() {
        expectViolation(.itemDeletedAndReloaded(path(0, 0)), from: [[1, 2]], to: [[2]]) { view throws(BatchUpdateViolation) in
            try view.deleteItems(at: [path(0, 0)])
            try view.reloadItems(at: [path(0, 0)])
        }
        expectViolation(.sectionDeletedAndReloaded(0), from: [[1], [2]], to: [[2]]) { view throws(BatchUpdateViolation) in
            try view.deleteSections([0])
            try view.reloadSections([0])
        }
    }

    @Test("§2.7: reload and move of the same item")
    func reloadAndMove() {
        expectViolation(.itemReloadedAndMoved(path(0, 0)), from: [[1, 2]], to: [[2, 1]]) { view throws(BatchUpdateViolation) in
            try view.reloadItems(at: [path(0, 0)])
            try view.moveItem(at: path(0, 0), to: path(0, 1))
        }
        expectViolation(.sectionReloadedAndMoved(0), from: [[1], [2]], to: [[2], [1]]) { view throws(BatchUpdateViolation) in
            try view.reloadSections([0])
            try view.moveSection(0, toSection: 1)
        }
    }

    @Test("§2.8: two moves to the same destination or from the same source")
    func duplicateMoves() {
        expectViolation(.duplicateItemOperation(.moveDestination, path(0, 2)), from: [[1, 2, 3]], to: [[3, 2, 1]]) { view throws(BatchUpdateViolation) in
            try view.moveItem(at: path(0, 0), to: path(0, 2))
            try view.moveItem(at: path(0, 1), to: path(0, 2))
        }
        expectViolation(.duplicateItemOperation(.moveSource, path(0, 0)), from: [[1, 2, 3]], to: [[2, 3, 1]]) { view throws(BatchUpdateViolation) in
            try view.moveItem(at: path(0, 0), to: path(0, 2))
            try view.moveItem(at: path(0, 0), to: path(0, 1))
        }
    }

    @Test("§2.9: deleting the same path twice raises instead of corrupting later")
    func doubleDelete() {
        expectViolation(.duplicateItemOperation(.delete, path(0, 0)), from: [[1, 2]], to: [[2]]) { view throws(BatchUpdateViolation) in
            try view.deleteItems(at: [path(0, 0), path(0, 0)])
        }
    }

    @Test("§2.10: moving out of a deleted section raises; deleting inside it is ignored; inserting into an inserted section is strict-only")
    func deletedAndInsertedSections() throws {
        expectViolation(.moveOutOfDeletedSection(path(0, 0)), from: [[1], [2]], to: [[2, 1]]) { view throws(BatchUpdateViolation) in
            try view.deleteSections([0])
            try view.moveItem(at: path(0, 0), to: path(0, 1))
        }
        let (view, dataSource) = loadedView([[1], [2]])
        try batch(view, dataSource, to: Snapshot(sections: [dataSource.snapshot.sections[1]])) { view throws(BatchUpdateViolation) in
            try view.deleteSections([0])
            try view.deleteItems(at: [path(0, 0)])
        }
        #expect(view.staleCells().isEmpty)

        expectViolation(.insertIntoInsertedSection(path(1, 0)), from: [[1]], to: [[1], [2]]) { view throws(BatchUpdateViolation) in
            try view.insertSections([1])
            try view.insertItems(at: [path(1, 0)])
        }
        let (lenient, lenientSource) = loadedView([[1]], strict: false)
        try batch(lenient, lenientSource, to: snapshot([[1], [2]])) { view throws(BatchUpdateViolation) in
            try view.insertSections([1])
            try view.insertItems(at: [path(1, 0)])
        }
        #expect(lenient.warnings == [.insertIntoInsertedSection(path(1, 0))])
    }

    @Test("§2.11: item operations inside a section moved or reloaded in the same batch")
    func itemOperationInMovedOrReloadedSection() {
        expectViolation(.itemOperationInMovedOrReloadedSection(.delete, path(0, 0)), from: [[1, 2], [3]], to: [[3], [2]]) { view throws(BatchUpdateViolation) in
            try view.moveSection(0, toSection: 1)
            try view.deleteItems(at: [path(0, 0)])
        }
        expectViolation(.itemOperationInMovedOrReloadedSection(.insert, path(0, 1)), from: [[1]], to: [[1, 2]]) { view throws(BatchUpdateViolation) in
            try view.reloadSections([0])
            try view.insertItems(at: [path(0, 1)])
        }
    }

    @Test("§3.2: a data source mutated before the batch opens (no cached counts) is caught")
    func dataSourceMutatedBeforeBatch() throws {
        let dataSource = SnapshotDataSource(snapshot([[1, 2]]))
        let view = HeadlessListView(dataSource: dataSource)
        dataSource.snapshot = snapshot([[1, 2, 3]])
        #expect(throws: BatchUpdateViolation.itemCountMismatch(section: 0, before: 3, after: 3, inserted: 1, deleted: 0, movedIn: 0, movedOut: 0)) {
            try view.insertItems(at: [path(0, 2)])
        }
    }

    @Test("a data source whose content changed without a reload shows stale cells")
    func staleCellsAreDetected() throws {
        let (view, dataSource) = loadedView([[1, 2]])
        dataSource.snapshot.sections[0].items[1].version = 1
        #expect(view.staleCells() == [path(0, 1)])
        try view.reconfigureItems(at: [path(0, 1)])
        #expect(view.staleCells().isEmpty)
    }
}
