import ArgumentParser
import TokenProxyCredentials

/// `tokenproxy token PROVIDER [--format raw|header|json] [--method M --url U]`: prints a
/// valid access token (refreshing it when needed) on stdout and nothing else; every message
/// goes to stderr. For a DPoP-bound token, `--method` and `--url` name the request the
/// printed proof is for.
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a valid access token on stdout."
    )
    @OptionGroup var options: ConfigOption
    @Argument(help: "Provider name.") var provider: String
    @Option(help: "raw: the token alone; header: the header line the proxy sends; json: token, type and expiry.")
    var format: TokenPrintFormat = .raw
    @Option(help: "For a DPoP-bound token: the method of the request the proof is for.")
    var method: String = "GET"
    @Option(help: "For a DPoP-bound token: the URL of the request the proof is for.")
    var url: String?

    func run() throws {
        let context = try CredentialCommandContext(options: self.options)
        let provider = try context.provider(self.provider)
        // An OAuth 1.0a request carries a signature of its own, not a header made of the token.
        guard provider.grant != .oauth1 || self.format == .raw else {
            Console.error("--format \(self.format.rawValue) does not apply to an oauth1 provider: use tokenproxy sign")
            throw ExitStatus.configError
        }
        let (token, entry) = try context.token(of: self.provider)
        let request = self.url.map { TokenPrintFormat.ProofRequest(method: self.method, url: $0) }
        switch self.format.render(token, formatter: entry.formatter, provider: self.provider, request: request) {
        case .success(let text):
            print(text)
        case .failure(let error):
            Console.error("\(error.code): \(error.message)")
            throw ExitStatus.runtimeFailure
        }
    }
}

extension TokenPrintFormat: ExpressibleByArgument {}
