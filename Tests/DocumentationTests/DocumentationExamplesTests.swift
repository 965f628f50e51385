import Foundation
import Testing

/// Every Swift code block of the README, the DocC catalogs and the doc comments of the modules
/// built on every platform appears, line for line, in `DocumentationExamples.swift` — which the
/// test target compiles. An example that drifts from the API fails here or fails to build.
struct DocumentationExamplesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The Swift blocks of a Markdown text.
    static func blocks(inMarkdown text: String) -> [String] {
        var blocks: [String] = []
        var current: [String]?
        for line in text.components(separatedBy: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if current == nil, trimmed == "```swift" {
                current = []
            } else if current != nil, trimmed == "```" {
                blocks.append(current?.joined(separator: "\n") ?? "")
                current = nil
            } else if current != nil {
                current?.append(line)
            }
        }
        return blocks
    }

    /// The Swift blocks of the `///` comments of a source file.
    static func blocks(inSource text: String) -> [String] {
        let comment = text.components(separatedBy: "\n").map { line -> String in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("///") else { return "" }
            let body = trimmed.dropFirst(3)
            return String(body.hasPrefix(" ") ? body.dropFirst() : body)
        }
        return blocks(inMarkdown: comment.joined(separator: "\n"))
    }

    /// The lines that matter: trimmed, no blank lines, no imports (the examples file imports
    /// every module once).
    static func significantLines(_ text: String) -> [String] {
        text.components(separatedBy: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("import ") }
    }

    static func documentedBlocks() throws -> [(source: String, block: String)] {
        var result: [(String, String)] = []
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        result += blocks(inMarkdown: readme).map { ("README.md", $0) }
        let sources = root.appendingPathComponent("Sources")
        // LiveListUIKit only builds on Apple platforms; its doc comments carry no Swift blocks.
        for module in ["ListDiff", "ListPresenter", "ListTesting", "LiveQuery", "LiveListUIKit"] {
            let folder = sources.appendingPathComponent(module)
            let files = try FileManager.default.subpathsOfDirectory(atPath: folder.path).sorted()
            for file in files where file.hasSuffix(".md") || file.hasSuffix(".swift") {
                let url = folder.appendingPathComponent(file)
                let text = try String(contentsOf: url, encoding: .utf8)
                if file.hasSuffix(".md") { result += blocks(inMarkdown: text).map { ("\(module)/\(file)", $0) } }
                if file.hasSuffix(".swift") { result += blocks(inSource: text).map { ("\(module)/\(file)", $0) } }
            }
        }
        return result
    }

    @Test("every documented Swift example is compiled, line for line, by this test target")
    func examplesAreCompiled() throws {
        let examples = Self.significantLines(try String(contentsOf: Self.root.appendingPathComponent("Tests/DocumentationTests/DocumentationExamples.swift"), encoding: .utf8))
        let documented = try Self.documentedBlocks()
        #expect(documented.count >= 25, "found only \(documented.count) examples")
        for (source, block) in documented {
            let lines = Self.significantLines(block)
            guard !lines.isEmpty else { continue }
            var found = false
            for start in examples.indices where examples[start] == lines[0] && start + lines.count <= examples.count {
                let window: [String] = Array(examples[start..<(start + lines.count)])
                if window == lines {
                    found = true
                    break
                }
            }
            #expect(found, "the example in \(source) is not in DocumentationExamples.swift:\n\(block)")
        }
    }

    @Test("the UIKit adapters' doc comments carry no Swift block that Linux CI could not compile")
    func uikitDocsHaveNoUncompiledBlocks() throws {
        let folder = Self.root.appendingPathComponent("Sources/LiveListUIKit")
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            #expect(Self.blocks(inSource: text).isEmpty, "\(file)")
        }
    }
}
