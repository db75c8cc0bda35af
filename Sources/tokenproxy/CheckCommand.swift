import ArgumentParser

/// `tokenproxy check`: validates the config and prints the route table.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate the config and print the route table; exit 2 listing every problem."
    )

    @OptionGroup var options: ConfigOption

    func run() throws {
        let configuration = try ConfigLoader.load(self.options.path, printWarnings: true)
        for note in configuration.sharedSecretFiles() {
            Console.note("\(note)")
        }
        let table = configuration.routeTable()
        print(table, terminator: table.hasSuffix("\n") ? "" : "\n")
    }
}
