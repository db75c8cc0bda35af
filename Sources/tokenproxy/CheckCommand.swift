import ArgumentParser
import TokenProxyCore

/// `tokenproxy check`: validates the config and prints the route table.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate the config and print the route table; exit 2 listing every problem."
    )

    @OptionGroup var options: ConfigOption

    func run() throws {
        let configuration: ProxyConfiguration
        do {
            configuration = try ProxyConfiguration.load(path: self.options.path)
        } catch {
            Console.error("\(self.options.path): \(error.problems.count) problem(s):")
            for problem in error.problems {
                Console.error("  \(problem)")
            }
            throw ExitStatus.configError
        }
        for warning in configuration.warnings {
            Console.error("warning: \(warning)")
        }
        print(configuration.routeTable(), terminator: configuration.routeTable().hasSuffix("\n") ? "" : "\n")
    }
}
