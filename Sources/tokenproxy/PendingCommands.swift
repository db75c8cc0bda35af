import ArgumentParser
import TokenProxyCore

/// Commands whose subsystems are not part of this build yet. Each says so and exits 1
/// rather than pretending to work.
protocol PendingCommand: ParsableCommand {}

extension PendingCommand {
    func run() throws {
        Console.error("tokenproxy \(Self.configuration.commandName ?? ""): not available in this version yet")
        throw ExitStatus.runtimeFailure
    }
}

/// `tokenproxy login PROVIDER`.
struct LoginCommand: PendingCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Run an interactive grant (authorization code, device code, OAuth 1) and store the tokens."
    )
    @OptionGroup var options: ConfigOption
    @Argument(help: "Provider name.") var provider: String
}

/// `tokenproxy logout PROVIDER`.
struct LogoutCommand: PendingCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Revoke the provider's tokens and delete them from the store."
    )
    @OptionGroup var options: ConfigOption
    @Argument(help: "Provider name.") var provider: String
}

/// `tokenproxy token PROVIDER`.
struct TokenCommand: PendingCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a valid access token on stdout."
    )
    @OptionGroup var options: ConfigOption
    @Argument(help: "Provider name.") var provider: String
}

/// `tokenproxy status`.
struct StatusCommand: PendingCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show each provider's grant, token presence, expiry and last error."
    )
    @OptionGroup var options: ConfigOption
}
