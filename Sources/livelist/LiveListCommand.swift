import ArgumentParser
import Foundation
import LiveListCommands

@main
struct LiveListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "livelist",
        abstract: "Keep list views in sync with live data.",
        subcommands: [DemoCommand.self, ServeCommand.self, BenchCommand.self, DiffCommand.self]
    )

    /// Every failure exits with status 2 and one line on standard error, as the CLI contract says;
    /// help and version requests still exit 0.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let error as InputError {
            FileHandle.standardError.write(Data("livelist: \(error.description)\n".utf8))
            Foundation.exit(2)
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }
            let message = fullMessage(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            FileHandle.standardError.write(Data("livelist: \(message)\n".utf8))
            Foundation.exit(2)
        }
    }
}
