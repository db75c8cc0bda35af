import Foundation

extension ProxyConfiguration {
    /// Makes the file paths of the configuration independent of the working directory: a
    /// leading `~/` becomes `home`, and a relative path is resolved against `baseDirectory`
    /// (the configuration file's directory) when there is one.
    ///
    /// Covered: secret files, `token_store.path`, Unix socket listeners, `ca_file`,
    /// `client_cert`, `service_account_file`, and a `command` program given by a relative path
    /// with a `/` (`./bin/token`; a bare name is looked up in `PATH`).
    mutating func resolvePaths(baseDirectory: String?, home: String) {
        let resolve = { (path: String) in Self.resolve(path, baseDirectory: baseDirectory, home: home) }
        let resolveSecret = { (secret: Secret?) -> Secret? in
            guard case .file(let path)? = secret else { return secret }
            return .file(resolve(path))
        }

        self.listen = Self.resolve(self.listen, resolve)
        if case .listener(let address) = self.admin { self.admin = .listener(Self.resolve(address, resolve)) }
        if case .file(let path, let key) = self.tokenStore {
            self.tokenStore = .file(path: resolve(path), encryptionKey: resolveSecret(key))
        }
        if case .redis(var redis) = self.tokenStore {
            redis.password = resolveSecret(redis.password)
            redis.encryptionKey = resolveSecret(redis.encryptionKey) ?? redis.encryptionKey
            self.tokenStore = .redis(redis)
        }
        if let requirement = self.requireHeader, let value = resolveSecret(requirement.value) {
            self.requireHeader = HeaderRequirement(name: requirement.name, value: value)
        }
        for name in self.providers.keys {
            guard var provider = self.providers[name] else { continue }
            for (_, field) in ProviderConfiguration.secretKeys {
                provider[keyPath: field] = resolveSecret(provider[keyPath: field])
            }
            for (_, field) in ProviderConfiguration.pathKeys {
                provider[keyPath: field] = provider[keyPath: field].map(resolve)
            }
            let dpopKey = resolveSecret(provider.dpop?.key)
            provider.dpop?.key = dpopKey
            if var argv = provider.command, let program = argv.first, program.contains("/") {
                argv[0] = resolve(program)
                provider.command = argv
            }
            self.providers[name] = provider
        }
        for index in self.routes.indices {
            self.routes[index].caFile = self.routes[index].caFile.map(resolve)
            self.routes[index].clientCert = self.routes[index].clientCert.map(resolve)
            self.routes[index].clientKey = resolveSecret(self.routes[index].clientKey)
        }
    }

    private static func resolve(_ address: ListenAddress, _ resolve: (String) -> String) -> ListenAddress {
        guard case .unix(let path) = address else { return address }
        return .unix(path: resolve(path))
    }

    /// `path` with `~/` expanded and, when relative, prefixed by `baseDirectory`.
    static func resolve(_ path: String, baseDirectory: String?, home: String) -> String {
        if path == "~" { return home }
        if path.hasPrefix("~/") {
            return (home.hasSuffix("/") ? String(home.dropLast()) : home) + path.dropFirst()
        }
        guard !path.hasPrefix("/"), !path.isEmpty, let baseDirectory, !baseDirectory.isEmpty else { return path }
        var relative = Substring(path)
        while relative.hasPrefix("./") { relative = relative.dropFirst(2) }
        return (baseDirectory.hasSuffix("/") ? baseDirectory : baseDirectory + "/") + relative
    }
}
