import ListDiff
import LiveListWire

/// A section or item read from `livelist diff` input: an identifier (string or number) and an
/// optional value whose equality is the element's content equality.
package struct JSONListElement: ListElement, Hashable, Sendable {
    package var id: JSONValue
    package var value: JSONValue?

    package func isContentEqual(to other: JSONListElement) -> Bool { value == other.value }
}

/// `livelist diff`'s input: a sectioned snapshot read from JSON.
package typealias JSONSnapshot = ListSnapshot<JSONListElement, JSONListElement>

/// Input whose JSON is valid but whose shape is not `[{"id", "value"?, "items": [{"id", "value"?}]}]`.
package struct SnapshotShapeError: Error, CustomStringConvertible {
    package var path: String
    package var message: String
    package var description: String { "\(path): \(message)" }
}

extension JSONSnapshot {
    /// Reads a sectioned snapshot from its JSON form. Identifiers compare as JSON text would:
    /// strings code point for code point, integers by all their digits; a number with a fraction
    /// or an exponent that equals a 64-bit integer is that integer (`1` and `1.0` are one id).
    package init(json: JSONValue) throws(SnapshotShapeError) {
        guard case let .array(sections) = json else {
            throw SnapshotShapeError(path: "$", message: "expected an array of sections")
        }
        var result: [SnapshotSection<JSONListElement, JSONListElement>] = []
        result.reserveCapacity(sections.count)
        for (sectionIndex, section) in sections.enumerated() {
            let sectionPath = "$[\(sectionIndex)]"
            let model = try Self.element(section, at: sectionPath, kind: "section")
            guard let itemsValue = section["items"] else {
                throw SnapshotShapeError(path: sectionPath, message: "a section needs an \"items\" array")
            }
            guard case let .array(items) = itemsValue else {
                throw SnapshotShapeError(path: sectionPath + ".items", message: "expected an array of items")
            }
            var elements: [JSONListElement] = []
            elements.reserveCapacity(items.count)
            for (itemIndex, item) in items.enumerated() {
                elements.append(try Self.element(item, at: "\(sectionPath).items[\(itemIndex)]", kind: "item"))
            }
            result.append(SnapshotSection(model, items: elements))
        }
        self.init(sections: result)
    }

    private static func element(_ value: JSONValue, at path: String, kind: String) throws(SnapshotShapeError) -> JSONListElement {
        guard case .object = value else {
            throw SnapshotShapeError(path: path, message: "expected an object for a \(kind)")
        }
        guard let id = value["id"] else {
            throw SnapshotShapeError(path: path, message: "a \(kind) needs an \"id\"")
        }
        switch id {
        case .string, .integer, .bigInteger:
            return JSONListElement(id: id, value: value["value"])
        case let .double(number):
            if number == number.rounded(), let exact = Int64(exactly: number) {
                return JSONListElement(id: .integer(exact), value: value["value"])
            }
            return JSONListElement(id: id, value: value["value"])
        default:
            throw SnapshotShapeError(path: path + ".id", message: "an id must be a string or a number")
        }
    }
}

extension ListChanges {
    /// The stage's operations in the CLI's output form.
    package var json: (sections: JSONValue, items: JSONValue) {
        func path(_ path: ItemPath) -> JSONValue { [.integer(Int64(path.section)), .integer(Int64(path.item))] }
        func indices(_ values: [Int]) -> JSONValue { .array(values.map { .integer(Int64($0)) }) }
        let sections = JSONValue([
            "delete": indices(sectionDeletes),
            "insert": indices(sectionInserts),
            "move": .array(sectionMoves.map { [.integer(Int64($0.from)), .integer(Int64($0.to))] }),
            "reload": indices(sectionReloads),
        ])
        let items = JSONValue([
            "delete": .array(itemDeletes.map(path)),
            "insert": .array(itemInserts.map(path)),
            "move": .array(itemMoves.map { [path($0.from), path($0.to)] }),
            "reload": .array(itemReloads.map(path)),
        ])
        return (sections, items)
    }
}

extension Changeset where SectionModel == JSONListElement, Item == JSONListElement {
    /// The CLI's output: the stages, each with its operations and the state after it, plus any
    /// duplicate identifiers seen.
    package var json: JSONValue {
        let stages: [JSONValue] = stages.map { stage in
            let (sections, items) = stage.changes.json
            let after: [JSONValue] = stage.snapshot.sections.map { section in
                JSONValue(["id": section.model.id, "items": .array(section.items.map(\.id))])
            }
            return JSONValue(["sections": sections, "items": items, "after": .array(after)])
        }
        let duplicatesValue = JSONValue([
            "sections": .array(duplicates.sectionIDs.sorted { $0.serialized < $1.serialized }),
            "items": .array(duplicates.itemIDs.sorted { $0.serialized < $1.serialized }),
        ])
        return JSONValue(["stages": .array(stages), "duplicates": duplicatesValue])
    }
}
