import FuzzSupport
import ListDiff
import ListTesting
import LiveListCommands
import LiveListWire

// `livelist diff OLD.json NEW.json`: each file's JSON (`JSONParser`) read as a sectioned snapshot
// (`JSONSnapshot`), the two diffed, and the changeset written as the command writes it. The
// stages the command prints must be UIKit-safe and lead from the old list to the new: they are
// applied, stage by stage, to a strict headless view over the old snapshot, which must end up
// showing the new one. An input is the two files' texts, separated by a NUL byte (which JSON text
// never holds).

@MainActor
func diff(_ old: JSONSnapshot, _ new: JSONSnapshot) {
    let changeset = Changeset(from: old, to: new)
    _ = changeset.json.serialized
    let dataSource = SnapshotDataSource(old)
    let view = HeadlessListView<JSONListElement, JSONListElement>(dataSource: dataSource, realization: .all, viewportRows: 8)
    view.layoutIfNeeded()
    do {
        try view.apply(changeset, to: dataSource)
    } catch {
        preconditionFailure("a stage UIKit would refuse: \(error)")
    }
    precondition(view.violations.isEmpty && view.staleCells().isEmpty, "\(view.violations), stale \(view.staleCells())")
    // Identifiers given twice are reported, and the list shown is the new one as the diff reads it.
    if changeset.duplicates.sectionIDs.isEmpty && changeset.duplicates.itemIDs.isEmpty {
        let shown = dataSource.snapshot.sections.map { ($0.model.id, $0.items.map(\.id)) }
        let wanted = new.sections.map { ($0.model.id, $0.items.map(\.id)) }
        precondition(shown.elementsEqual(wanted) { $0.0 == $1.0 && $0.1 == $1.1 }, "the stages do not lead to the new list")
    }
}

FuzzTarget.main { bytes in
    let parts = bytes.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false)
    var snapshots: [JSONSnapshot] = []
    for part in [parts.first ?? [], parts.count > 1 ? parts[1] : []] {
        let json: JSONValue
        do throws(JSONParser.SyntaxError) {
            json = try JSONParser.parse(Array(part))
        } catch {
            precondition(error.line >= 1 && error.column >= 1, "\(error)")
            return
        }
        do throws(SnapshotShapeError) {
            snapshots.append(try JSONSnapshot(json: json))
        } catch {
            precondition(error.path.hasPrefix("$"), "\(error)")
            return
        }
    }
    MainActor.assumeIsolated { diff(snapshots[0], snapshots[1]) }
}
