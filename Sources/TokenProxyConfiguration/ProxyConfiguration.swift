import Foundation

/// The whole configuration file: listeners, client-facing defences, token store, limits,
/// providers and routes. See `docs/reference/configuration.md` for every key.
///
/// ``load(path:)`` and ``decode(_:)`` read, decode and validate in one pass and throw a
/// ``ConfigurationError`` carrying every problem found, each with its JSON path.
package struct ProxyConfiguration: Sendable, Equatable {
    /// `listen`: where clients connect. Default `127.0.0.1:8080`.
    package var listen: ListenAddress
    /// `allow_remote_clients`: accept a non-loopback `listen` (or `admin.listen`). Default false.
    var allowRemoteClients: Bool
    /// `allowed_hosts`: accepted `Host` header values, lowercased (a port in the header is
    /// ignored unless an entry has one); `["*"]` disables the check (DNS-rebinding defence).
    /// Default ``defaultAllowedHosts``.
    package var allowedHosts: [String]
    /// `require_header`: a header every request must carry, else 403. Default none.
    package var requireHeader: HeaderRequirement?
    /// `token_store`: where tokens persist. Default a file at
    /// ``TokenStoreConfiguration/defaultPath(environment:)``.
    package var tokenStore: TokenStoreConfiguration
    /// `admin`: where the admin endpoints are served. Default ``AdminConfiguration/default``.
    package var admin: AdminConfiguration
    /// `limits`: sizes and timeouts.
    package var limits: Limits
    /// `providers`: name → provider.
    package var providers: [String: ProviderConfiguration]
    /// `routes`: in file order (matching picks the longest prefix, not the first).
    package var routes: [RouteConfiguration]

    /// `127.0.0.1:8080`.
    static let defaultListen = ListenAddress.inet(host: "127.0.0.1", port: 8080)
    /// The loopback names: `localhost`, `127.0.0.1`, `[::1]`, `::1`.
    static let defaultAllowedHosts = ["localhost", "127.0.0.1", "[::1]", "::1"]
    /// The largest configuration file read.
    static let maxFileBytes = 4 << 20

    /// Creates a configuration; omitted arguments take their defaults (the token store's
    /// default path comes from this process's environment).
    package init(
        listen: ListenAddress = Self.defaultListen,
        allowRemoteClients: Bool = false,
        allowedHosts: [String] = Self.defaultAllowedHosts,
        requireHeader: HeaderRequirement? = nil,
        tokenStore: TokenStoreConfiguration? = nil,
        admin: AdminConfiguration = .default,
        limits: Limits = Limits(),
        providers: [String: ProviderConfiguration] = [:],
        routes: [RouteConfiguration] = []
    ) {
        self.listen = listen
        self.allowRemoteClients = allowRemoteClients
        self.allowedHosts = allowedHosts
        self.requireHeader = requireHeader
        self.tokenStore = tokenStore ?? .defaultStore(environment: ProcessInfo.processInfo.environment)
        self.admin = admin
        self.limits = limits
        self.providers = providers
        self.routes = routes
    }

    /// The configuration path used without `--config`: `$TOKENPROXY_CONFIG` when set and not
    /// empty, else `./proxy.json`.
    package static func defaultPath(environment: [String: String]) -> String {
        if let path = environment["TOKENPROXY_CONFIG"], !path.isEmpty { return path }
        return "./proxy.json"
    }

    /// Reads, decodes and validates the file at `path`. Relative paths inside it (secret
    /// files, CA files, the token store, Unix sockets) are resolved against the file's
    /// directory, and `~/` against `$HOME`.
    package static func load(path: String) throws(ConfigurationError) -> ProxyConfiguration {
        try self.load(path: path, environment: ProcessInfo.processInfo.environment)
    }

    /// ``load(path:)`` with an explicit environment (for `HOME` and `XDG_STATE_HOME`).
    package static func load(path: String, environment: [String: String]) throws(ConfigurationError)
        -> ProxyConfiguration
    {
        let data: Data
        do {
            data = try ConfigurationFile.read(path: path, maxBytes: Self.maxFileBytes, what: "configuration file")
        } catch {
            throw ConfigurationError(message: error.message)
        }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        return try self.decode(data, environment: environment, baseDirectory: directory)
    }

    /// Decodes and validates a configuration document. Relative paths stay relative (to the
    /// working directory).
    package static func decode(_ data: Data) throws(ConfigurationError) -> ProxyConfiguration {
        try self.decode(data, environment: ProcessInfo.processInfo.environment, baseDirectory: nil)
    }

    /// Decodes and validates a configuration document, resolving relative paths against
    /// `baseDirectory` when given.
    package static func decode(
        _ data: Data,
        environment: [String: String],
        baseDirectory: String?
    ) throws(ConfigurationError) -> ProxyConfiguration {
        let syntax = ConfigurationJSONChecker.check(data)
        if let error = syntax.error { throw ConfigurationError(problems: [error]) }

        let problems = ConfigurationProblemCollector(environment: environment, baseDirectory: baseDirectory)
        problems.add(contentsOf: syntax.duplicateKeys)
        let decoder = JSONDecoder()
        if let key = ConfigurationProblemCollector.userInfoKey { decoder.userInfo[key] = problems }
        let configuration: ProxyConfiguration?
        do {
            configuration = try decoder.decode(ProxyConfiguration.self, from: data)
        } catch {
            problems.record(error, at: [], expected: "an object", found: nil)
            configuration = nil
        }
        let all = ConfigurationPath.sorted(problems.all, topLevelKeys: Self.keys)
        guard all.isEmpty, let configuration else {
            throw ConfigurationError(
                problems: all.isEmpty
                    ? [ConfigurationProblem(path: "", message: "the configuration could not be decoded")] : all
            )
        }
        return configuration
    }

    /// The problems of this configuration as it stands (after changing it in code, e.g.
    /// applying `serve --listen`); empty when it is usable.
    package func validationProblems() -> [ConfigurationProblem] {
        self.validationProblems(routeIndices: Array(self.routes.indices), brokenProviders: [])
    }

    /// Throws every problem of ``validationProblems()``, if there is any.
    package func validate() throws(ConfigurationError) {
        let problems = self.validationProblems()
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
    }
}
