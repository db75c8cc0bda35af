import Foundation

extension ProxyConfiguration {
    /// Every problem of the configuration. `routeIndices[i]` is the position in the file of
    /// `routes[i]` (they differ when a broken route was left out while decoding), and routes
    /// naming a provider in `brokenProviders` are not reported again.
    func validationProblems(routeIndices: [Int], brokenProviders: Set<String>) -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        func add(_ path: String, _ message: String) {
            problems.append(ConfigurationProblem(path: path, message: message))
        }

        self.listenerProblems(add)
        self.clientDefenceProblems(add)
        if case .file(let path, _) = self.tokenStore, path.isEmpty { add("token_store.path", "must not be empty") }
        problems += self.limits.problems(at: "limits")

        for name in self.providers.keys.sorted() {
            guard let provider = self.providers[name] else { continue }
            let path = ConfigurationPath.join("providers", name)
            if !Self.isProviderName(name) {
                add(
                    path,
                    "provider names may contain only letters, digits, '.', '_' and '-', starting with a letter or digit"
                )
            }
            problems += provider.problems(at: path)
        }

        var routesByKey: [String: Int] = [:]
        var routesByName: [String: Int] = [:]
        for (position, route) in self.routes.enumerated() {
            let index = position < routeIndices.count ? routeIndices[position] : position
            let path = ConfigurationPath.index("routes", index)
            problems += route.problems(at: path, providers: self.providers, brokenProviders: brokenProviders)
            let matchKey = "\(route.host ?? "*") \(route.pathPrefix)"
            let duplicatesRoute = routesByKey[matchKey] != nil
            if let first = routesByKey[matchKey] {
                add(
                    ConfigurationPath.join(path, "path_prefix"),
                    "duplicate route: routes[\(first)] has the same host and path_prefix"
                )
            } else {
                routesByKey[matchKey] = index
            }
            // A duplicate route whose name defaulted to the same prefix is reported once, above.
            if let first = routesByName[route.name], !(duplicatesRoute && route.name == route.pathPrefix) {
                add(ConfigurationPath.join(path, "name"), "duplicate route name: routes[\(first)] has the same name")
            } else if routesByName[route.name] == nil {
                routesByName[route.name] = index
            }
            if case .pathPrefix(let adminPrefix) = self.admin,
                route.pathPrefix == adminPrefix || route.pathPrefix.hasPrefix(adminPrefix + "/")
            {
                add(
                    ConfigurationPath.join(path, "path_prefix"),
                    "is under the admin path prefix \(adminPrefix); change one of them (admin.path_prefix)"
                )
            }
        }
        return problems
    }

    /// Non-loopback listeners need `allow_remote_clients`; the admin listener is its own.
    private func listenerProblems(_ add: (String, String) -> Void) {
        let remoteHint = "is not a loopback address; set allow_remote_clients to true to accept remote clients"
        if !self.listen.isLoopback, !self.allowRemoteClients { add("listen", remoteHint) }
        if let problem = Self.unixPathProblem(self.listen) { add("listen", problem) }
        switch self.admin {
        case .listener(let address):
            if !address.isLoopback, !self.allowRemoteClients { add("admin.listen", remoteHint) }
            if address == self.listen { add("admin.listen", "must differ from listen") }
            if let problem = Self.unixPathProblem(address) { add("admin.listen", problem) }
        case .pathPrefix(let prefix):
            if prefix == "/" || !prefix.hasPrefix("/") || prefix.hasSuffix("/") {
                add("admin.path_prefix", "must start with '/', not end with '/', and not be '/' itself")
            } else if let problem = RouteConfiguration.pathPrefixProblem(prefix) {
                add("admin.path_prefix", problem)
            }
        }
    }

    /// `allowed_hosts` and `require_header`.
    private func clientDefenceProblems(_ add: (String, String) -> Void) {
        if self.allowedHosts.isEmpty {
            add("allowed_hosts", "must not be empty (use [\"*\"] to disable the Host check)")
        } else if self.allowedHosts.contains("*"), self.allowedHosts.count > 1 {
            add("allowed_hosts", "\"*\" disables the Host check and must be the only entry")
        }
        for (index, host) in self.allowedHosts.enumerated() where host != "*" {
            if let problem = ConfigurationSyntax.hostPatternProblem(host) {
                add(ConfigurationPath.index("allowed_hosts", index), problem)
            }
        }
        if let requirement = self.requireHeader {
            if let problem = ConfigurationSyntax.headerNameProblem(requirement.name) {
                add("require_header.name", problem)
            } else if requirement.name.lowercased() == "authorization" {
                add("require_header.name", "must not be Authorization, which routes use for credentials")
            }
            if case .literal(let value) = requirement.value, !ConfigurationSyntax.isFieldValue(value) {
                add("require_header.value", "must not contain CR, LF, NUL or other control characters")
            }
        }
    }

    /// A Unix socket path made too long by resolving it against the configuration directory.
    private static func unixPathProblem(_ address: ListenAddress) -> String? {
        guard case .unix(let path) = address, path.utf8.count > ListenAddress.maxUnixPathBytes else { return nil }
        return "the Unix socket path must be at most \(ListenAddress.maxUnixPathBytes) bytes long"
    }

    /// Letters, digits, `.`, `_`, `-`, starting with a letter or digit: names go on command
    /// lines (`tokenproxy login NAME`), into metric labels and JSON paths.
    static func isProviderName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCIIAlphanumeric else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCIIAlphanumeric || "._-".unicodeScalars.contains($0) }
    }
}

extension Unicode.Scalar {
    /// `A-Z`, `a-z`, `0-9`.
    fileprivate var isASCIIAlphanumeric: Bool {
        ("a"..."z").contains(self) || ("A"..."Z").contains(self) || ("0"..."9").contains(self)
    }
}
