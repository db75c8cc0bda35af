import Foundation

extension ProxyConfiguration {
    /// Every secret in the configuration with its JSON path, in a stable order.
    var secrets: [(path: String, secret: Secret)] {
        var secrets: [(path: String, secret: Secret)] = []
        if let requirement = self.requireHeader { secrets.append(("require_header.value", requirement.value)) }
        if case .file(_, let key?) = self.tokenStore { secrets.append(("token_store.encryption_key", key)) }
        for name in self.providers.keys.sorted() {
            guard let provider = self.providers[name] else { continue }
            for (key, field) in ProviderConfiguration.secretKeys {
                if let secret = provider[keyPath: field] {
                    secrets.append((ConfigurationPath.join(ConfigurationPath.join("providers", name), key), secret))
                }
            }
        }
        for (index, route) in self.routes.enumerated() {
            if let key = route.clientKey {
                secrets.append((ConfigurationPath.join(ConfigurationPath.index("routes", index), "client_key"), key))
            }
        }
        return secrets
    }

    /// Problems with the secrets as they are now on this machine, for start-up and `check`:
    /// an environment variable that is unset, a secret file that cannot be read, and a secret
    /// file, service-account file or existing token store readable or writable by group or
    /// others (RFC 6819 §5.3.3), with the `chmod` that fixes it. Never contains a value.
    public func secretProblems() -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        for (path, secret) in self.secrets {
            do {
                _ = try secret.resolve()
            } catch {
                problems.append(
                    contentsOf: error.problems.map { ConfigurationProblem(path: path, message: $0.message) }
                )
                continue
            }
            if let file = secret.filePath, let problem = Self.permissionProblem(file) {
                problems.append(ConfigurationProblem(path: path, message: problem))
            }
        }
        for name in self.providers.keys.sorted() {
            if let file = self.providers[name]?.serviceAccountFile {
                let path = ConfigurationPath.join(ConfigurationPath.join("providers", name), "service_account_file")
                if ConfigurationFile.stamp(path: file) == nil {
                    problems.append(ConfigurationProblem(path: path, message: "cannot read \(file)"))
                } else if let problem = Self.permissionProblem(file) {
                    problems.append(ConfigurationProblem(path: path, message: problem))
                }
            }
        }
        if case .file(let file, _) = self.tokenStore, let problem = Self.permissionProblem(file) {
            problems.append(ConfigurationProblem(path: "token_store.path", message: problem))
        }
        return problems
    }

    /// "… is readable or writable by group or others (mode 0644); fix it with: chmod 600 PATH",
    /// or `nil` when the file is private or does not exist.
    static func permissionProblem(_ file: String) -> String? {
        guard let stamp = ConfigurationFile.stamp(path: file), stamp.permissions & 0o066 != 0 else { return nil }
        let mode = String(stamp.permissions & 0o777, radix: 8)
        return "\(file) is readable or writable by group or others (mode 0\(mode)); fix it with: chmod 600 \(file)"
    }
}
