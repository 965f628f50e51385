import ArgumentParser
import Foundation
import ListDiff
import LiveListCommands
import LiveListTools
import LiveListWire

/// `livelist diff OLD.json NEW.json`: the changeset and its UIKit-safe stages as JSON.
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Diff two sectioned snapshots and print the staged changeset as JSON.",
        discussion: """
            Input files hold [{"id": <string|number>, "value": <any, optional>, "items": [{"id": …, "value": …}]}].
            Output: {"stages": [{"sections": {…}, "items": {…}, "after": [{"id": …, "items": [id…]}]}…], "duplicates": {…}}.
            """
    )

    @Argument(help: "The old snapshot (JSON file).") var old: String
    @Argument(help: "The new snapshot (JSON file).") var new: String

    func run() throws {
        let oldSnapshot = try Self.readSnapshot(old)
        let newSnapshot = try Self.readSnapshot(new)
        print(Changeset(from: oldSnapshot, to: newSnapshot).json.serialized)
    }

    static func readSnapshot(_ path: String) throws(InputError) -> JSONSnapshot {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw InputError("\(path): no such file")
        }
        guard !isDirectory.boolValue else { throw InputError("\(path): is a directory, not a JSON file") }
        guard FileManager.default.isReadableFile(atPath: path) else { throw InputError("\(path): permission denied") }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw InputError("\(path): cannot read the file")
        }
        do {
            return try JSONSnapshot(json: JSONParser.parse(Array(data)))
        } catch let error as JSONParser.SyntaxError {
            throw InputError("\(path): invalid JSON at \(error)")
        } catch {
            throw InputError("\(path): \(error)")
        }
    }
}
