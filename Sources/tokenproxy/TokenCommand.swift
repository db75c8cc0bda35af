import ArgumentParser
import TokenProxyCredentials

/// `tokenproxy token PROVIDER`: prints a valid access token (refreshing it when needed) on
/// stdout and nothing else; every message goes to stderr.
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a valid access token on stdout."
    )
    @OptionGroup var options: ConfigOption
    @Argument(help: "Provider name.") var provider: String

    func run() throws {
        let context = try CredentialCommandContext(options: self.options)
        _ = try context.provider(self.provider)
        let registry = CredentialRegistry(
            configuration: context.configuration,
            fetcher: context.fetcher,
            store: context.store,
            logger: context.logger
        )
        guard let entry = registry.entry(self.provider) else {
            throw ExitStatus.configError
        }
        switch entry.source.waitForToken() {
        case .success(let token):
            print(token.value)
        case .failure(let error):
            Console.error("\(error.code): \(error.message)")
            throw ExitStatus.runtimeFailure
        }
    }
}
