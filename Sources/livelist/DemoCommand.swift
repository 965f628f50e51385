import ArgumentParser

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "demo", abstract: "Show a live list.")
    func run() throws {}
}
