import Foundation

extension ProxyConfiguration: Decodable {
    /// Every top-level JSON key.
    static let keys = [
        "listen", "allow_remote_clients", "allowed_hosts", "require_header", "token_store", "admin", "limits",
        "providers", "routes",
    ]

    /// Decodes, resolves relative paths and validates the whole document, recording every
    /// problem in the decoder's collector (or, decoded on its own, throwing them all).
    package init(from decoder: any Decoder) throws {
        self = try decoder.withConfigurationProblems { problems in
            let object = try decoder.configurationObject(keyedBy: ConfigurationCodingKey.self, problems)
            _ = decoder.configurationKeys(known: Self.keys, problems)
            func key(_ name: String) -> ConfigurationCodingKey {
                assert(Self.keys.contains(name), "\(name) is missing from ProxyConfiguration.keys")
                return ConfigurationCodingKey(name)
            }
            for required in ["providers", "routes"] where !object.contains(key(required)) {
                problems.add(required, "missing required key")
            }

            let routeElements =
                object.configValue([ConfigurationElement<RouteConfiguration>].self, forKey: key("routes"), problems)
                ?? []
            var routes: [RouteConfiguration] = []
            var routeIndices: [Int] = []
            for (index, element) in routeElements.enumerated() {
                guard let route = element.value else { continue }
                routes.append(route)
                routeIndices.append(index)
            }
            let allowedHosts = object.configList(String.self, forKey: key("allowed_hosts"), problems)

            var configuration = ProxyConfiguration(
                listen: object.configValue(ListenAddress.self, forKey: key("listen"), problems) ?? Self.defaultListen,
                allowRemoteClients: object.configValue(Bool.self, forKey: key("allow_remote_clients"), problems)
                    ?? false,
                allowedHosts: allowedHosts.map { $0.map { $0.lowercased() } } ?? Self.defaultAllowedHosts,
                requireHeader: object.configValue(HeaderRequirement.self, forKey: key("require_header"), problems),
                tokenStore: object.configValue(TokenStoreConfiguration.self, forKey: key("token_store"), problems)
                    ?? .defaultStore(environment: problems.environment),
                admin: object.configValue(AdminConfiguration.self, forKey: key("admin"), problems) ?? .default,
                limits: object.configValue(Limits.self, forKey: key("limits"), problems) ?? Limits(),
                providers: object.configMap(ProviderConfiguration.self, forKey: key("providers"), problems) ?? [:],
                routes: routes
            )
            configuration.resolvePaths(
                baseDirectory: problems.baseDirectory,
                home: TokenStoreConfiguration.home(environment: problems.environment)
            )

            // A value already reported while decoding (a wrong type, say) was replaced by a
            // placeholder; validation must not report that placeholder a second time, nor a
            // value whose insides were reported (`providers.p.token` after `...token.fiel`).
            let reported = problems.paths
            let validation = configuration.validationProblems(
                routeIndices: routeIndices,
                brokenProviders: problems.brokenProviders
            )
            problems.add(contentsOf: validation.filter { !Self.isCovered($0.path, by: reported) })
            return configuration
        }
    }

    /// Whether `path` or a value inside it is among the `reported` paths.
    private static func isCovered(_ path: String, by reported: Set<String>) -> Bool {
        if reported.contains(path) { return true }
        guard !path.isEmpty else { return false }
        return reported.contains { $0.hasPrefix(path + ".") || $0.hasPrefix(path + "[") }
    }
}
