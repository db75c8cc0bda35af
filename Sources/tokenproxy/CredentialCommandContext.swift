import ArgumentParser
import Logging
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyUpstream

#if canImport(Glibc)
    import Glibc
#endif

/// What `login`, `logout`, `token` and `status` share: the loaded configuration, the token
/// store it names, and a libcurl engine for the provider's endpoints.
struct CredentialCommandContext {
    let configuration: ProxyConfiguration
    let store: any TokenStore
    let fetcher: UpstreamFetcher
    let logger: Logger

    /// Loads the configuration (exit 2 on problems, an open token store included).
    init(options: ConfigOption) throws {
        var configuration = try ConfigLoader.load(options.path)
        // A command waits for the token request itself, not a request's share of it: leaving
        // earlier would end the process, and the request with it, before a rotated refresh
        // token it brought was stored.
        let limits = configuration.limits
        configuration.limits.tokenWaitSeconds = max(limits.tokenWaitSeconds, limits.tokenRequestSeconds + 2)
        self.configuration = configuration
        // A Redis store that cannot be reached fails the command: what it obtained or changed
        // would otherwise live only in this process's memory, and end with it.
        self.store = try ConfigLoader.openStore(self.configuration, sharedOnly: true)
        signal(SIGPIPE, SIG_IGN)
        do {
            self.fetcher = UpstreamFetcher(engine: try CurlEngine())
        } catch {
            Console.error("cannot start the upstream engine: \(error)")
            throw ExitStatus.runtimeFailure
        }
        var logger = Logger(label: "tokenproxy")
        logger.logLevel = .warning
        self.logger = logger
    }

    /// A valid token of provider `name`, obtained as `serve` obtains it (through the token
    /// store and its locks), with the provider's entry for its header; exit 1 with `CODE:
    /// message` on stderr when it cannot be had.
    func token(of name: String) throws -> (token: AccessToken, entry: CredentialRegistry.Entry) {
        let registry = CredentialRegistry(
            configuration: self.configuration,
            fetcher: self.fetcher,
            store: self.store,
            logger: self.logger
        )
        guard let entry = registry.entry(name) else { throw ExitStatus.configError }
        switch entry.source.waitForToken() {
        case .success(let token):
            return (token, entry)
        case .failure(let error):
            Console.error("\(error.code): \(error.message)")
            throw ExitStatus.runtimeFailure
        }
    }

    /// The provider named `name`, or exit 2 listing the configured ones.
    func provider(_ name: String) throws -> ProviderConfiguration {
        guard let provider = self.configuration.providers[name] else {
            let known = self.configuration.providers.keys.sorted().joined(separator: ", ")
            Console.error("no provider named \"\(name)\"; configured: \(known.isEmpty ? "none" : known)")
            throw ExitStatus.configError
        }
        return provider
    }
}
