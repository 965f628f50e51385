import Foundation
import Testing

@Suite(.serialized)
struct DiffCommandTests {
    @Test("livelist diff prints stages whose last state is the new snapshot")
    func diffPrintsStages() async throws {
        let old = try CommandRunner.temporaryFile(#"[{"id": "a", "items": [{"id": 1, "value": "x"}, {"id": 2}, {"id": 3}]}, {"id": "b", "items": [{"id": 4}]}]"#)
        let new = try CommandRunner.temporaryFile(#"[{"id": "b", "items": [{"id": 4}, {"id": 2}]}, {"id": "a", "items": [{"id": 3}, {"id": 1, "value": "y"}]}]"#)
        let result = try await CommandRunner.run(["diff", old, new])
        #expect(result.status == 0, "\(result.standardError)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        let stages = try #require(object["stages"] as? [[String: Any]])
        #expect(stages.count >= 2)
        let after = try #require(stages.last?["after"] as? [[String: Any]])
        #expect(after.map { $0["id"] as? String } == ["b", "a"])
        #expect(after.map { ($0["items"] as? [Int]) ?? [] } == [[4, 2], [3, 1]])
        for stage in stages {
            let sections = try #require(stage["sections"] as? [String: Any])
            let items = try #require(stage["items"] as? [String: Any])
            #expect(Set(sections.keys) == ["delete", "insert", "move", "reload"])
            #expect(Set(items.keys) == ["delete", "insert", "move", "reload"])
        }
        // The content change of item 1 is a reload at its old path, in the first stage.
        let firstItems = try #require(stages.first?["items"] as? [String: Any])
        #expect((firstItems["reload"] as? [[Int]]) == [[0, 0]])
    }

    @Test("identical snapshots give no stages")
    func identicalGivesNoStages() async throws {
        let file = try CommandRunner.temporaryFile(#"[{"id": 1, "items": [{"id": 1}]}]"#)
        let result = try await CommandRunner.run(["diff", file, file])
        #expect(result.status == 0)
        #expect(result.standardOutput.hasPrefix(#"{"stages":[]"#))
    }

    @Test("malformed JSON: one line naming the file, line and column; exit 2")
    func malformedJSON() async throws {
        let good = try CommandRunner.temporaryFile(#"[]"#)
        let bad = try CommandRunner.temporaryFile("[{\"id\": 1,\n  \"items\": [1,]}]", name: "bad.json")
        let result = try await CommandRunner.run(["diff", good, bad])
        #expect(result.status == 2)
        #expect(result.standardError.contains("bad.json"))
        #expect(result.standardError.contains("line 2, column 15"), "\(result.standardError)")
        #expect(result.standardError.split(separator: "\n").count == 1)
        #expect(result.standardOutput.isEmpty)
    }

    @Test("input of the wrong shape names the JSON path; exit 2")
    func wrongShape() async throws {
        let good = try CommandRunner.temporaryFile(#"[]"#)
        let bad = try CommandRunner.temporaryFile(#"[{"id": 1, "items": [{"id": 1}, {"id": true}]}]"#, name: "shape.json")
        let result = try await CommandRunner.run(["diff", bad, good])
        #expect(result.status == 2)
        #expect(result.standardError.contains("shape.json: $[0].items[1].id"), "\(result.standardError)")
        let missingItems = try CommandRunner.temporaryFile(#"[{"id": 1}]"#, name: "noitems.json")
        #expect(try await CommandRunner.run(["diff", missingItems, good]).standardError.contains("$[0]: a section needs an \"items\" array"))
    }

    @Test("an unreadable file: exit 2")
    func unreadableFile() async throws {
        let good = try CommandRunner.temporaryFile(#"[]"#)
        let result = try await CommandRunner.run(["diff", good, "/nonexistent/new.json"])
        #expect(result.status == 2)
        #expect(result.standardError.contains("/nonexistent/new.json"))
    }

    @Test("ids compare as JSON text: canonically equivalent strings and 20-digit integers stay apart; 1 and 1.0 are one id")
    func idsAreExact() async throws {
        // "é" precomposed and decomposed; two integers that one Double cannot tell apart.
        let old = try CommandRunner.temporaryFile(#"[{"id": "s", "items": [{"id": "\u00e9"}, {"id": 12345678901234567890123}, {"id": 1}]}]"#)
        let new = try CommandRunner.temporaryFile(#"[{"id": "s", "items": [{"id": "e\u0301"}, {"id": 12345678901234567890124}, {"id": 1.0}]}]"#)
        let result = try await CommandRunner.run(["diff", old, new])
        #expect(result.status == 0, "\(result.standardError)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        let stages = try #require(object["stages"] as? [[String: Any]])
        let deletes = stages.flatMap { (($0["items"] as? [String: Any])?["delete"] as? [[Int]]) ?? [] }
        let inserts = stages.flatMap { (($0["items"] as? [String: Any])?["insert"] as? [[Int]]) ?? [] }
        #expect(deletes == [[0, 0], [0, 1]], "\(result.standardOutput)")
        #expect(inserts == [[0, 0], [0, 1]], "\(result.standardOutput)")
        #expect(result.standardOutput.contains("12345678901234567890124"))
    }

    @Test("a duplicate object key is rejected with its position; a directory or a missing file gets a plain message")
    func duplicateKeysAndPaths() async throws {
        let good = try CommandRunner.temporaryFile(#"[]"#)
        let duplicate = try CommandRunner.temporaryFile("[{\"id\": 1,\n \"id\": 2, \"items\": []}]", name: "dup.json")
        let result = try await CommandRunner.run(["diff", duplicate, good])
        #expect(result.status == 2)
        #expect(result.standardError.contains("dup.json") && result.standardError.contains("duplicate key \"id\"")
                && result.standardError.contains("line 2, column 2"), "\(result.standardError)")
        let directory = FileManager.default.temporaryDirectory.path
        let asDirectory = try await CommandRunner.run(["diff", directory, good])
        #expect(asDirectory.status == 2)
        #expect(asDirectory.standardError == "livelist: \(directory): is a directory, not a JSON file\n", "\(asDirectory.standardError)")
        let missing = try await CommandRunner.run(["diff", good, "/nonexistent/x.json"])
        #expect(missing.standardError == "livelist: /nonexistent/x.json: no such file\n", "\(missing.standardError)")
    }

    @Test("duplicate identifiers are reported, not fatal")
    func duplicatesReported() async throws {
        let old = try CommandRunner.temporaryFile(#"[{"id": 1, "items": [{"id": 7}, {"id": 7}]}]"#)
        let new = try CommandRunner.temporaryFile(#"[{"id": 1, "items": [{"id": 7}]}]"#)
        let result = try await CommandRunner.run(["diff", old, new])
        #expect(result.status == 0)
        #expect(result.standardOutput.contains(#""duplicates":{"sections":[],"items":[7]}"#), "\(result.standardOutput)")
    }
}

struct BenchCommandTests {
    @Test("livelist bench --json prints one object per line with the contract's keys")
    func benchJSON() async throws {
        let result = try await CommandRunner.run(["bench", "--quick", "--json", "--filter", "diff.uuid.5k"])
        #expect(result.status == 0, "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n")
        #expect(lines.count == 1)
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["bench"] as? String == "diff.uuid.5k")
            #expect((object["median_ms"] as? Double).map { $0 > 0 } == true)
            #expect(object["baseline"] as? String == "CollectionDifference.inferringMoves")
            #expect(object["baseline_median_ms"] is Double)
        }
    }
}
