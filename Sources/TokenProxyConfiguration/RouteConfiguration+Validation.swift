import Foundation

extension RouteConfiguration {
    /// The problems of this route on its own and against the providers, with paths under
    /// `path` (`routes[2]`). Providers in `brokenProviders` were already reported.
    func problems(
        at path: String,
        providers: [String: ProviderConfiguration],
        brokenProviders: Set<String>
    ) -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        func add(_ key: String, _ message: String) {
            problems.append(ConfigurationProblem(path: ConfigurationPath.join(path, key), message: message))
        }

        // An empty name that defaulted to a missing path_prefix is reported as the latter.
        let nameIsMissingPrefix = self.name.isEmpty && self.pathPrefix.isEmpty
        if !nameIsMissingPrefix, self.name.isEmpty || !ConfigurationSyntax.isFieldValue(self.name) {
            add("name", "must be a non-empty name without control characters")
        }
        if let problem = Self.pathPrefixProblem(self.pathPrefix) { add("path_prefix", problem) }
        if let host = self.host, let problem = ConfigurationSyntax.hostPatternProblem(host) { add("host", problem) }

        if self.upstream.isEmpty {
            add("upstream", "missing required key")
        } else {
            switch ConfigurationURL.check(self.upstream, allowsQuery: false) {
            case .failure(let problem):
                add("upstream", problem.message)
            case .success(.http) where self.provider != nil && !self.allowInsecureUpstream:
                add(
                    "upstream",
                    "refusing to send credentials over plain HTTP; use https, or set allow_insecure_upstream to true"
                )
            case .success:
                break
            }
        }

        var injectedHeader: String?
        if let name = self.provider {
            if let provider = providers[name] {
                injectedHeader = provider.header
            } else if !brokenProviders.contains(name) {
                let known = providers.keys.sorted()
                let hint = ConfigurationKeySuggestion.closest(to: name, among: known).map { "; did you mean '\($0)'?" }
                add("provider", "unknown provider '\(name)'\(hint ?? "")")
            }
        }

        for (key, file) in [("ca_file", self.caFile), ("client_cert", self.clientCert)] where file?.isEmpty == true {
            add(key, "must not be empty")
        }
        if let key = self.clientKey {
            if self.clientCert == nil { add("client_key", "needs client_cert") }
            if case .literal(let value) = key, !value.contains("-----BEGIN") {
                add("client_key", "must hold a PEM private key; for a key file use {\"file\": \"/path/to/key.pem\"}")
            }
        }
        if let timeout = self.timeoutSeconds, !(timeout > 0 && timeout <= Limits.maxSeconds) {
            add("timeout_seconds", "must be positive and at most \(Int(Limits.maxSeconds)) seconds")
        }

        var seen: Set<String> = []
        for (name, value) in self.addHeaders.sorted(by: { $0.key < $1.key }) {
            let key = ConfigurationPath.join("add_headers", name)
            if let problem = ConfigurationSyntax.headerNameProblem(name) {
                add(key, problem)
            } else if !ConfigurationSyntax.isFieldValue(value) {
                add(key, "must not contain CR, LF, NUL or other control characters")
            } else if !seen.insert(name.lowercased()).inserted {
                add(key, "duplicate header (names are case-insensitive)")
            } else if let injected = injectedHeader, injected.lowercased() == name.lowercased() {
                add(key, "conflicts with the '\(injected)' header injected by provider '\(self.provider ?? "")'")
            }
        }
        for (index, name) in self.removeHeaders.enumerated() {
            if let problem = ConfigurationSyntax.headerNameProblem(name) {
                add(ConfigurationPath.index("remove_headers", index), problem)
            }
        }
        for (index, status) in self.renewOnStatus.enumerated() where !(400...599).contains(status) {
            // A success or a redirect says nothing against the token.
            add(ConfigurationPath.index("renew_on_status", index), "must be a 4xx or 5xx status")
        }
        for (index, name) in self.upgradeProtocols.enumerated() {
            // RFC 9110 §7.8: protocol-name ["/" protocol-version], both tokens.
            let parts = name.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            if !parts.allSatisfy({ ConfigurationSyntax.isToken(String($0)) }) {
                add(
                    ConfigurationPath.index("upgrade_protocols", index),
                    "must be an Upgrade protocol name such as \"websocket\" (a token, optionally /version)"
                )
            }
        }
        return problems
    }

    /// The problem with a path prefix, if any: it starts with `/` and is a plain path, with no
    /// query, fragment, percent-encoding, empty, `.` or `..` segment, space, control or
    /// non-ASCII character, so that it means the same before and after the server normalizes a request path.
    static func pathPrefixProblem(_ prefix: String) -> String? {
        if prefix.isEmpty { return "missing required key" }
        guard prefix.hasPrefix("/") else { return "must start with '/'" }
        if prefix.count > 1, prefix.hasSuffix("/") { return "must not end with '/'" }
        if prefix.contains(where: { "?#%\\".contains($0) }) {
            return "must be a plain path, without '?', '#', '%' or '\\'"
        }
        if prefix.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7F }) {
            return "must contain only printable ASCII characters, without spaces"
        }
        let segments = prefix.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        if prefix != "/", segments.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) {
            return "must not contain empty, '.' or '..' segments"
        }
        return nil
    }
}
