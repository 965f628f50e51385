import LiveListClient
import LiveListWire

/// A pending change as the store keeps it: one protocol `arguments` message whose arguments are
/// the change's parts (`$kind`, `$id`, `$placement`, `$section`) and its values (`=` and the
/// column's name), so that reading it back uses the protocol's strict decoding.
extension PendingChange {
    func stored() -> String {
        var parts: [String: WireValue] = ["$id": id]
        switch self {
        case let .insert(_, values, placement):
            parts["$kind"] = .text("insert")
            for (name, value) in values { parts["=" + name] = value }
            switch placement {
            case .sorted: parts["$placement"] = .text("sorted")
            case let .first(section):
                parts["$placement"] = .text("first")
                parts["$section"] = section
            case let .last(section):
                parts["$placement"] = .text("last")
                parts["$section"] = section
            }
        case let .update(_, values):
            parts["$kind"] = .text("update")
            for (name, value) in values { parts["=" + name] = value }
        case .delete:
            parts["$kind"] = .text("delete")
        }
        return ClientMessage.arguments(sub: 0, parts).encoded()
    }

    init(stored text: String) throws(WireDecodingError) {
        guard case let .arguments(_, parts) = try ClientMessage.decode(Array(text.utf8)), let id = parts["$id"],
              case let .text(kind)? = parts["$kind"] else { throw .invalidField("change", "not a kept pending change") }
        var values: [String: WireValue] = [:]
        for (key, value) in parts where key.hasPrefix("=") { values[String(key.dropFirst())] = value }
        switch kind {
        case "insert":
            let placement: PendingPlacement
            switch (parts["$placement"], parts["$section"]) {
            case (.text("sorted")?, nil): placement = .sorted
            case let (.text("first")?, section?): placement = .first(inSection: section)
            case let (.text("last")?, section?): placement = .last(inSection: section)
            default: throw .invalidField("$placement", "not a placement")
            }
            self = .insert(id: id, values: values, placement: placement)
        case "update": self = .update(id: id, values: values)
        case "delete": self = .delete(id: id)
        default: throw .invalidField("$kind", "not a change")
        }
    }
}
