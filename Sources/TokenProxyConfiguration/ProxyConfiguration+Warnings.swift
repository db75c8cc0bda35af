import Foundation

extension ProxyConfiguration {
    /// Headers whose values are credentials: a literal one in `add_headers` is a literal secret.
    private static let credentialHeaders: Set<String> = [
        "authorization", "cookie", "x-api-key", "api-key", "x-auth-token", "private-token",
    ]

    /// Non-fatal findings printed by `check` (and logged at start-up): literal secrets (with
    /// their JSON path), no routes, a disabled Host check, credentials over plain HTTP, the
    /// deprecated password grant. Never contains a secret value.
    package var warnings: [ConfigurationProblem] {
        var warnings: [ConfigurationProblem] = []
        func add(_ path: String, _ message: String) {
            warnings.append(ConfigurationProblem(path: path, message: message))
        }

        for (path, secret) in self.secrets where secret.isLiteral {
            add(path, "literal secret; prefer {\"env\": ...} or {\"file\": ...}")
        }
        if self.routes.isEmpty {
            add("routes", "no routes: the proxy will only serve the admin endpoints")
        }
        if self.allowedHosts == ["*"] {
            add("allowed_hosts", "[\"*\"] disables the Host check, the defence against DNS rebinding")
        } else if self.allowRemoteClients, !self.listen.isLoopback, self.allowedHosts == Self.defaultAllowedHosts {
            add(
                "allowed_hosts",
                "only loopback names are allowed: remote clients get 403 unless allowed_hosts lists the names they use"
            )
        }
        for name in self.providers.keys.sorted() where self.providers[name]?.grant == .password {
            add(
                ConfigurationPath.join(ConfigurationPath.join("providers", name), "grant"),
                "the password grant is deprecated (RFC 9700 §2.4); prefer authorization_code or device_code"
            )
        }
        for name in self.providers.keys.sorted() {
            guard let provider = self.providers[name], provider.grant == .oauth1 else { continue }
            let path = ConfigurationPath.join("providers", name)
            let loginURLs = [provider.requestTokenURL, provider.accessTokenURL].compactMap { $0 }
            if provider.oauth1SignatureMethod == .plaintext,
                loginURLs.contains(where: { $0.lowercased().hasPrefix("http://") })
            {
                // RFC 5849 §3.4.4: PLAINTEXT is only for secure channels.
                add(
                    ConfigurationPath.join(path, "signature_method"),
                    "PLAINTEXT sends the consumer secret and token secrets as the signature: over plain HTTP they can be read on the way"
                )
            }
            if provider.oauth1SignatureMethod == .rsaSHA1, provider.privateKey != nil, provider.consumerSecret != nil {
                add(ConfigurationPath.join(path, "consumer_secret"), "not used: RSA-SHA1 signs with private_key")
            }
        }
        for (index, route) in self.routes.enumerated() {
            let path = ConfigurationPath.index("routes", index)
            if route.provider != nil, route.allowInsecureUpstream, route.upstream.lowercased().hasPrefix("http://") {
                add(ConfigurationPath.join(path, "upstream"), "credentials will be sent over plain HTTP")
            }
            for header in route.addHeaders.keys.sorted() where Self.credentialHeaders.contains(header.lowercased()) {
                add(
                    ConfigurationPath.join(ConfigurationPath.join(path, "add_headers"), header),
                    "literal credential; prefer a 'static' provider with {\"env\": ...} or {\"file\": ...}"
                )
            }
        }
        return warnings
    }
}
