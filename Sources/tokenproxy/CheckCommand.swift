import ArgumentParser
import TokenProxyCredentials
import TokenProxySupport

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
        // The store a proxy would use; a Redis server that does not answer is a warning, not
        // a configuration problem: the proxies serve without it (docs/guide/redis.md).
        let store = configuration.tokenStore.makeStore()
        print("token store: \(TextEscaping.escape(store.location))")
        if let problem = store.unavailability() {
            Console.warning("token store unreachable: \(TextEscaping.escape(problem))")
        }
    }
}
