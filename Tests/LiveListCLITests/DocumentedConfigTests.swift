import Foundation
import OwnThread
import GRDB
import Testing

/// DOCUMENTATION CHECK — docs/SERVER.md documents the YAML of `livelist serve --config FILE` for
/// users and client authors who read nothing else; these tests hold it to the built `livelist`:
///
/// - every YAML block of docs/SERVER.md (and the README's) is a file the server starts with, uses
///   only keys the document's tables name, and, when its section shows the SQLite schema it
///   serves, has SQL that SQLite prepares against that schema;
/// - every key the tables of "The configuration file" name is one the loader reads at the level
///   the table says. The loader ignores unknown keys, so a misspelt key would load as if absent:
///   each key is given a value of the wrong shape instead, which the loader must refuse at exactly
///   that place (`… at queries.[0].section`).
///
/// A PostgreSQL example is started over an empty SQLite database: the loader and the token
/// settings are checked when the server starts, the SQL only when a client subscribes.
@Suite("docs/SERVER.md: the documented configuration files load", .serialized)
struct DocumentedConfigTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The tables of docs/SERVER.md's "The configuration file", by heading, and where the loader
    /// reports a problem with a key of each (the path of the key's mapping, with a trailing dot).
    static let levels: [String: String] = [
        "Top level": "",
        "A query": "queries.[0].",
        "A parameter": "queries.[0].parameters.[0].",
        "`tokens`": "tokens.",
        "A mutation": "mutations.[0].",
        "A statement": "mutations.[0].statements.[0].",
    ]

    /// A variable no test sets: the key checks' configuration needs a secret it never gets, so
    /// that a file the loader accepts stops at the secret instead of serving.
    static let unsetSecret = "LIVELIST_DOCUMENTED_CONFIG_UNSET_SECRET"

    @Test("Every YAML block of docs/SERVER.md and the README starts `livelist serve --config`, with documented keys only")
    func documentedFilesStart() async throws {
        let documented = Set(try Self.documentedKeys().map { $0.key })
        var checked: [String] = []
        for file in ["docs/SERVER.md", "README.md"] {
            let blocks = try Self.blocks(of: file)
            var ordinal = 0
            for (index, block) in blocks.enumerated() where block.language == "yaml" {
                ordinal += 1
                let source = "\(file), YAML block \(ordinal)"
                for key in Self.keys(in: block.text) where !documented.contains(key) {
                    Issue.record("\(source): \"\(key)\" is not a key docs/SERVER.md's tables document")
                }
                try await Self.start(block.text, schema: Self.schema(before: index, in: blocks), source: source)
                checked.append(source)
            }
        }
        // docs/SERVER.md's SQLite and PostgreSQL examples, and the README's.
        #expect(checked.filter { $0.hasPrefix("docs/SERVER.md") }.count >= 2, "\(checked)")
        #expect(checked.contains { $0.hasPrefix("README.md") }, "\(checked)")
    }

    @Test("Every key in docs/SERVER.md's tables is read by the loader, at the level its table says")
    func documentedKeysAreRead() async throws {
        let keys = try Self.documentedKeys()
        for (heading, _) in Self.levels {
            #expect(keys.contains { $0.heading == heading }, "docs/SERVER.md has no table of keys under \"### \(heading)\"")
        }
        // The configuration without a wrong value loads, and stops at the secret it lacks.
        let control = try await Self.refuse(Self.configuration(setting: nil))
        #expect(control.contains("must hold the HS256 secret"), "\(control)")
        for (heading, key) in keys {
            guard let prefix = Self.levels[heading] else {
                Issue.record("docs/SERVER.md: the keys under \"### \(heading)\" are of no level this test knows: add it to `levels`")
                continue
            }
            let place = prefix + key
            // A mapping where a scalar or a list goes is one wrong shape, a list where a mapping goes the other.
            var answers: [String] = []
            for value in ["{bad: 1}", "[bad]"] where !answers.contains(where: { $0.hasSuffix(" at \(place)\n") }) {
                answers.append(try await Self.refuse(Self.configuration(setting: (heading, key, value))))
            }
            #expect(answers.contains { $0.hasSuffix(" at \(place)\n") },
                    "docs/SERVER.md documents \"\(key)\" (\(heading)), but a wrong value there is not refused at \(place): \(answers)")
        }
    }

    // MARK: - The document

    /// A fenced block of a Markdown file: its language, its text, and the `## ` section it is in.
    struct Block {
        var language: String
        var text: String
        var section: String
    }

    static func blocks(of file: String) throws -> [Block] {
        let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
        var blocks: [Block] = []
        var section = ""
        var open: Block?
        for line in text.components(separatedBy: "\n") {
            if var block = open {
                if line.hasPrefix("```") {
                    blocks.append(block)
                    open = nil
                } else {
                    block.text += line + "\n"
                    open = block
                }
            } else if line.hasPrefix("```") {
                open = Block(language: String(line.dropFirst(3)).trimmingCharacters(in: .whitespaces), text: "", section: section)
            } else if line.hasPrefix("## ") {
                section = line
            }
        }
        return blocks
    }

    /// The schema a YAML block serves: the last SQL block before it in its section.
    static func schema(before index: Int, in blocks: [Block]) -> String? {
        blocks[..<index].last { $0.section == blocks[index].section && $0.language == "sql" }?.text
    }

    /// The keys the tables of "The configuration file" name (a table whose first column is
    /// "key"), with the `### ` heading each is under.
    static func documentedKeys() throws -> [(heading: String, key: String)] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/SERVER.md"), encoding: .utf8)
        var keys: [(heading: String, key: String)] = []
        var inConfiguration = false
        var heading = ""
        var tableOfKeys = false
        var previous = ""
        for line in text.components(separatedBy: "\n") {
            defer { previous = line }
            if line.hasPrefix("## ") { inConfiguration = line == "## The configuration file" }
            if line.hasPrefix("### ") { heading = String(line.dropFirst(4)) }
            guard inConfiguration, line.hasPrefix("|") else { continue }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count > 1 else { continue }
            if !previous.hasPrefix("|") {
                tableOfKeys = cells[1] == "key"
                continue
            }
            let cell = cells[1]
            guard tableOfKeys, cell.hasPrefix("`"), cell.hasSuffix("`"), cell.count > 2 else { continue }
            keys.append((heading, String(cell.dropFirst().dropLast())))
        }
        return keys
    }

    // MARK: - Reading the YAML blocks (as written in the documents: block mappings, flow-mapped list entries)

    static func indentation(_ line: String) -> Int { line.prefix { $0 == " " }.count }

    /// `line` without its comment and surrounding spaces.
    static func content(_ line: String) -> String {
        let text = line.range(of: " #").map { String(line[..<$0.lowerBound]) } ?? line
        return text.hasPrefix("#") ? "" : text.trimmingCharacters(in: .whitespaces)
    }

    /// The key of `text` (`key: value` or `key:`), if it starts with one.
    static func key(of text: String) -> String? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let key = text[..<colon]
        let after = text[text.index(after: colon)...]
        guard let first = key.first, first.isLetter || first == "_", key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }),
              after.isEmpty || after.first == " " else { return nil }
        return String(key)
    }

    /// Every key of a block, block scalars' text (a folded `sql`) skipped.
    static func keys(in yaml: String) -> [String] {
        var keys: [String] = []
        var scalarIndentation: Int?
        for line in yaml.components(separatedBy: "\n") {
            if let level = scalarIndentation {
                if line.trimmingCharacters(in: .whitespaces).isEmpty || indentation(line) > level { continue }
                scalarIndentation = nil
            }
            var text = content(line)
            if text.hasPrefix("- ") { text = String(text.dropFirst(2)).trimmingCharacters(in: .whitespaces) }
            if text.hasPrefix("{"), text.hasSuffix("}") {
                keys += text.dropFirst().dropLast().split(separator: ",").compactMap { Self.key(of: $0.trimmingCharacters(in: .whitespaces)) }
                continue
            }
            guard let name = Self.key(of: text) else { continue }
            keys.append(name)
            let value = text.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces)
            if [">", ">-", ">+", "|", "|-", "|+"].contains(value) { scalarIndentation = indentation(line) }
        }
        return keys
    }

    /// The value of the first `key:` of a block (at the top level only, with `topLevel`).
    static func value(of key: String, in yaml: String, topLevel: Bool = false) -> String? {
        for line in yaml.components(separatedBy: "\n") where !topLevel || indentation(line) == 0 {
            let text = content(line)
            if Self.key(of: text) == key { return text.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }

    /// Every `sql` of a block, its continuation lines (a folded scalar's, or a plain one's) joined.
    static func statements(in yaml: String) -> [String] {
        let lines = yaml.components(separatedBy: "\n")
        var statements: [String] = []
        for (index, line) in lines.enumerated() {
            let text = line.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "- ", with: "", options: .anchored)
            guard text.hasPrefix("sql:") else { continue }
            var parts: [String] = []
            let first = text.dropFirst(4).trimmingCharacters(in: .whitespaces)
            if ![">", ">-", ">+", "|", "|-", "|+", ""].contains(first) { parts.append(first) }
            let level = indentation(line) + (line.trimmingCharacters(in: .whitespaces).hasPrefix("- ") ? 2 : 0)
            for next in lines[(index + 1)...] {
                guard !next.trimmingCharacters(in: .whitespaces).isEmpty, indentation(next) > level else { break }
                parts.append(next.trimmingCharacters(in: .whitespaces))
            }
            statements.append(parts.joined(separator: " "))
        }
        return statements
    }

    /// The names of a block's queries: the `name` of each entry of its top-level `queries` list.
    static func queryNames(in yaml: String) -> [String] {
        let lines = yaml.components(separatedBy: "\n")
        guard let start = lines.firstIndex(where: { content($0) == "queries:" && indentation($0) == 0 }) else { return [] }
        var names: [String] = []
        var entryIndentation: Int?
        for line in lines[(start + 1)...] {
            let text = content(line)
            if text.isEmpty { continue }
            if indentation(line) == 0 { break }
            if entryIndentation == nil, text.hasPrefix("- ") { entryIndentation = indentation(line) }
            guard let level = entryIndentation else { continue }
            if indentation(line) == level, text.hasPrefix("- name:") {
                names.append(text.dropFirst(7).trimmingCharacters(in: .whitespaces))
            } else if indentation(line) == level + 2, text.hasPrefix("name:") {
                names.append(text.dropFirst(5).trimmingCharacters(in: .whitespaces))
            }
        }
        return names
    }

    // MARK: - Running `livelist serve`

    struct Run: Sendable {
        var status: Int32
        var output: String
        var errors: String
        /// The line the server prints once it listens, when it printed it.
        var listening: String?
    }

    /// Runs `livelist` in `directory` until it exits or, with `untilListening`, until it prints
    /// the line that says it listens (then stops it with SIGTERM); stopped after `timeout`.
    static func livelist(_ arguments: [String], environment: [String: String], in directory: URL, untilListening: Bool,
                         timeout: TimeInterval = 60) async throws -> Run {
        // On a thread of its own: the server's start is polled for seconds (see `onOwnThread`).
        try await onOwnThread {
            try livelistBlocking(arguments, environment: environment, in: directory, untilListening: untilListening, timeout: timeout)
        }
    }

    private static func livelistBlocking(_ arguments: [String], environment: [String: String], in directory: URL, untilListening: Bool,
                                         timeout: TimeInterval) throws -> Run {
        let outputFile = directory.appendingPathComponent("stdout-\(UUID().uuidString)")
        let errorFile = directory.appendingPathComponent("stderr-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        let output = try FileHandle(forWritingTo: outputFile)
        let errors = try FileHandle(forWritingTo: errorFile)
        defer {
            try? output.close()
            try? errors.close()
        }
        let process = Process()
        process.executableURL = CommandRunner.executable
        process.arguments = arguments
        process.environment = environment
        process.currentDirectoryURL = directory
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        func listening() -> String? {
            let text = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
            return text.components(separatedBy: "\n").dropLast().first { $0.hasPrefix("livelist serve: ws://") }
        }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline, !(untilListening && listening() != nil) {
            Thread.sleep(forTimeInterval: 0.05)
        }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return Run(status: process.terminationStatus,
                   output: (try? String(contentsOf: outputFile, encoding: .utf8)) ?? "",
                   errors: (try? String(contentsOf: errorFile, encoding: .utf8)) ?? "",
                   listening: listening())
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-documented-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Starts `livelist serve --config` with `yaml` and checks that it listens, publishing the
    /// block's queries, and stops with status 0. A block that names a `database` and has a
    /// schema is served from that database, made from the schema, and its SQL must prepare there;
    /// any other over an empty SQLite database given with `--db`.
    static func start(_ yaml: String, schema: String?, source: String) async throws {
        let directory = try temporaryDirectory()
        let file = directory.appendingPathComponent("serve.yaml")
        try Data(yaml.utf8).write(to: file)
        var arguments = ["serve", "--config", file.path, "--port", "0"]
        if let database = value(of: "database", in: yaml, topLevel: true), let schema {
            let queue = try DatabaseQueue(path: directory.appendingPathComponent(database).path)
            try await queue.write { db in try db.execute(sql: schema) }
            let queries = Self.statements(in: yaml)
            #expect(!queries.isEmpty, "\(source): no sql read")
            for sql in queries {
                do {
                    try await queue.read { db in _ = try db.makeStatement(sql: sql) }
                } catch {
                    Issue.record("\(source): its SQL does not prepare on the schema shown with it: \(sql): \(error)")
                }
            }
            try queue.close()
        } else {
            let database = directory.appendingPathComponent("empty.sqlite").path
            let queue = try DatabaseQueue(path: database)
            try await queue.write { db in try db.execute(sql: "PRAGMA user_version = 1") }
            try queue.close()
            arguments += ["--db", database]
        }
        var environment = ProcessInfo.processInfo.environment
        if let variable = value(of: "hmacSecretEnvironment", in: yaml) {
            environment[variable] = String(repeating: "documented-config-secret.", count: 2)
        }
        let names = queryNames(in: yaml)
        #expect(!names.isEmpty, "\(source): no query names read")
        let run = try await livelist(arguments, environment: environment, in: directory, untilListening: true)
        let expected = "(" + names.sorted().joined(separator: ", ") + ")"
        #expect(run.listening?.hasSuffix(expected) == true, "\(source): \(expected) expected; stdout: \(run.output) stderr: \(run.errors)")
        #expect(run.status == 0, "\(source): exit status \(run.status); stderr: \(run.errors)")
    }

    /// A configuration the loader accepts (a query with a claim-bound parameter, and tokens
    /// whose secret is never set), with one key set to a raw YAML value: `setting` names the
    /// key's table heading, the key, and the value.
    static func configuration(setting: (heading: String, key: String, value: String)?) -> String {
        indirect enum Node {
            case scalar(String)
            case mapping([(String, Node)])
            case list([Node])
        }
        func mapping(_ heading: String, _ entries: [(String, Node)]) -> Node {
            guard let setting, setting.heading == heading else { return .mapping(entries) }
            var entries = entries
            if let index = entries.firstIndex(where: { $0.0 == setting.key }) {
                entries[index].1 = .scalar(setting.value)
            } else {
                entries.append((setting.key, .scalar(setting.value)))
            }
            return .mapping(entries)
        }
        func lines(_ node: Node, indent: Int) -> [String] {
            let pad = String(repeating: " ", count: indent)
            switch node {
            case let .scalar(text):
                return [pad + text]
            case let .mapping(entries):
                return entries.flatMap { entry -> [String] in
                    if case let .scalar(text) = entry.1 { return [pad + entry.0 + ": " + text] }
                    return [pad + entry.0 + ":"] + lines(entry.1, indent: indent + 2)
                }
            case let .list(items):
                return items.flatMap { item -> [String] in
                    var entry = lines(item, indent: indent + 2)
                    entry[0] = pad + "- " + String(entry[0].dropFirst(indent + 2))
                    return entry
                }
            }
        }
        let parameter = mapping("A parameter", [("name", .scalar("owner")), ("type", .scalar("text")), ("claim", .scalar("sub"))])
        let query = mapping("A query", [("name", .scalar("mine")), ("sql", .scalar("SELECT id FROM message WHERE owner = :owner")),
                                        ("parameters", .list([parameter]))])
        let tokens = mapping("`tokens`", [("hmacSecretEnvironment", .scalar(unsetSecret))])
        let statement = mapping("A statement", [("sql", .scalar("DELETE FROM message WHERE id = :id")), ("mustChangeRows", .scalar("true"))])
        let mutation = mapping("A mutation", [("name", .scalar("drop")), ("parameters", .list([.mapping([("name", .scalar("id")), ("type", .scalar("integer"))])])),
                                              ("statements", .list([statement]))])
        let top = mapping("Top level", [("database", .scalar("documented.sqlite")), ("tokens", tokens), ("queries", .list([query])),
                                        ("mutations", .list([mutation]))])
        return lines(top, indent: 0).joined(separator: "\n") + "\n"
    }

    /// What `livelist serve --config` says of `yaml` when it refuses it (exit status 2, one line
    /// on standard error); an issue when it does otherwise.
    static func refuse(_ yaml: String) async throws -> String {
        let directory = try temporaryDirectory()
        let file = directory.appendingPathComponent("serve.yaml")
        try Data(yaml.utf8).write(to: file)
        var environment = ProcessInfo.processInfo.environment
        environment[unsetSecret] = nil
        let run = try await livelist(["serve", "--config", file.path, "--port", "0"], environment: environment, in: directory,
                               untilListening: false, timeout: 30)
        #expect(run.status == 2 && run.listening == nil, "\(yaml): exit status \(run.status), stdout: \(run.output)")
        #expect(run.errors.split(separator: "\n").count == 1, "\(run.errors)")
        return run.errors
    }
}
