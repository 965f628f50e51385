import Foundation
import Testing

/// Every Swift block of the README, `docs/`, the DocC catalogs and the doc comments is a file of
/// `Examples/`, verbatim with its imports — which this target compiles with
/// `MemberImportVisibility`, so an example compiles only with the imports it shows. An example that
/// drifts from the API fails to build; one whose file is missing, stale or left over fails here,
/// naming the file; `Scripts/update-documentation-examples.sh` rewrites them all.
struct DocumentationExamplesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("every documented Swift block is an example file, verbatim, and every example file is a documented block")
    func examplesMatchTheDocumentation() throws {
        let examples = try DocumentedExamples.expected(root: Self.root)
        #expect(examples.count >= 25, "found only \(examples.count) documented blocks")
        for problem in try DocumentedExamples.problems(root: Self.root) {
            Issue.record(Comment(rawValue: problem))
        }
    }

    @Test("an example file is named after its source and the first name its block declares")
    func fileNames() {
        #expect(DocumentedExamples.firstDeclaredName("import GRDB\n\n@MainActor\nfunc showInbox(from dbPool: DatabasePool) {}") == "showInbox")
        #expect(DocumentedExamples.firstDeclaredName("struct Contact: Codable {\n    var id: Int64\n}") == "Contact")
        #expect(DocumentedExamples.firstDeclaredName("extension UUID: @retroactive BitwiseIdentifier {}") == "UUID")
        #expect(DocumentedExamples.firstDeclaredName("// let x\nswitch state {\ncase .loading: break\n}") == nil)
    }

    @Test("a missing, stale or left-over example file is reported with its path")
    func problemsNameTheFile() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-docs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        for module in DocumentedExamples.modules {
            try FileManager.default.createDirectory(at: root.appendingPathComponent("Sources/\(module)"), withIntermediateDirectories: true)
        }
        try "```swift\nimport ListDiff\n\nfunc first() {}\n```\n".write(to: root.appendingPathComponent("README.md"), atomically: true, encoding: .utf8)
        let folder = DocumentedExamples.folder
        #expect(try DocumentedExamples.problems(root: root) == [
            "README.md block 1 has no file: run \(DocumentedExamples.updateCommand) to write \(folder)/README.first.swift",
        ])
        #expect(try DocumentedExamples.update(root: root).count == 1)
        #expect(try DocumentedExamples.problems(root: root).isEmpty)
        let file = root.appendingPathComponent("\(folder)/README.first.swift")
        try "// From README.md\nfunc first() {}\n".write(to: file, atomically: true, encoding: .utf8)
        try "".write(to: root.appendingPathComponent("\(folder)/README.gone.swift"), atomically: true, encoding: .utf8)
        let problems = try DocumentedExamples.problems(root: root)
        #expect(problems.count == 2)
        #expect(problems.first?.hasPrefix("\(folder)/README.first.swift differs from README.md block 1 at line 1") == true)
        #expect(problems.last == "\(folder)/README.gone.swift matches no documented block: run \(DocumentedExamples.updateCommand) to delete it")
    }

    @Test("the UIKit adapters' doc comments carry no Swift block that Linux CI could not compile")
    func uikitDocsHaveNoUncompiledBlocks() throws {
        let folder = Self.root.appendingPathComponent("Sources/LiveListUIKit")
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            #expect(DocumentedExamples.blocks(inSource: text).isEmpty, "\(file)")
        }
    }
}
