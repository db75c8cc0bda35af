import ArgumentParser
import TokenProxyConfiguration
import TokenProxySupport

/// `tokenproxy`: a local reverse proxy that adds OAuth credentials to requests.
@main
struct TokenProxyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokenproxy",
        abstract: "A local HTTP proxy that adds OAuth credentials to requests for programs that cannot.",
        version: TokenProxyVersion.description,
        subcommands: [
            ServeCommand.self, CheckCommand.self, LoginCommand.self, LogoutCommand.self, TokenCommand.self,
            StatusCommand.self, SignCommand.self, CredentialCommand.self, DemoCommand.self,
        ]
    )
}

/// The `--config` option every command takes.
struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: "Config file (default: $TOKENPROXY_CONFIG, else ./proxy.json).")
    var config: String?

    /// The path to read.
    var path: String {
        self.config ?? ProxyConfiguration.defaultPath(environment: ProcessEnvironment.variables)
    }
}

/// Exit codes (`docs/reference/cli.md`, "Exit codes"): 0 success, 1 runtime failure, 2 configuration
/// error; swift-argument-parser exits 64 (`EX_USAGE`) on a command-line usage error.
enum ExitStatus {
    static let runtimeFailure = ExitCode(1)
    static let configError = ExitCode(2)
}
