import ArgumentParser
import TokenProxyCredentials

/// `tokenproxy sign PROVIDER METHOD URL`: shows how a request would be signed for an `oauth1`
/// provider (docs/guide/oauth1.md, "When a provider refuses the signature").
struct SignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Show the OAuth 1.0a signature base string and header for a request."
    )
    @OptionGroup var options: ConfigOption
    @Argument(help: "Provider name (grant oauth1).") var provider: String
    @Argument(help: "HTTP method, such as GET or POST.") var method: String
    @Argument(help: "The upstream URL, as the provider sees it, query included.") var url: String
    @Option(name: .long, help: "An application/x-www-form-urlencoded body, which is signed too.") var data: String?
    @Option(name: .long, help: "The nonce to use (to reproduce a documented example).") var nonce: String?
    @Option(name: .long, help: "The timestamp to use (to reproduce a documented example).") var timestamp: String?
    @Flag(name: .long, help: "Also print oauth_signature (for PLAINTEXT, that is the secrets).")
    var showSignature = false

    func run() throws {
        let configuration = try ConfigLoader.load(self.options.path)
        guard let provider = configuration.providers[self.provider] else {
            Console.error("no provider named \"\(self.provider)\"")
            throw ExitStatus.configError
        }
        let result = OAuth1Diagnostics.sign(
            provider: provider,
            store: provider.token == nil ? try ConfigLoader.openStore(configuration) : nil,
            method: self.method,
            url: self.url,
            form: self.data,
            nonce: self.nonce,
            timestamp: self.timestamp,
            showSignature: self.showSignature
        )
        switch result {
        case .success(let diagnostics):
            print("base string:")
            print("  \(diagnostics.baseString)")
            print("parameters (encoded, in signing order):")
            for parameter in diagnostics.parameters {
                print("  \(parameter.name)=\(parameter.value)")
            }
            if let signature = diagnostics.signature {
                print("signature:")
                print("  \(signature)")
            }
            print("header:")
            print("  Authorization: \(diagnostics.header)")
        case .failure(let error):
            Console.error("\(error.code): \(error.message)")
            throw ExitStatus.runtimeFailure
        }
    }
}
