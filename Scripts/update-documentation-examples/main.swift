import Foundation

// Writes Tests/DocumentationTests/Examples from the documentation's Swift blocks (see
// DocumentedExamples.swift); `--check` only lists what is out of date and exits 1 if anything is.
let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
do {
    if CommandLine.arguments.dropFirst().first == "--check" {
        let problems = try DocumentedExamples.problems(root: root)
        for problem in problems { print(problem) }
        exit(problems.isEmpty ? 0 : 1)
    }
    let changes = try DocumentedExamples.update(root: root)
    for change in changes { print(change) }
    print(changes.isEmpty ? "examples up to date" : "build and run `swift test --filter DocumentationExamples` to compile them")
} catch {
    print("update-documentation-examples: \(error)")
    exit(2)
}
