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
    /// every ``unresolvableSecrets()`` and ``secretPermissionProblems()``. Never contains a value.
    public func secretProblems() -> [ConfigurationProblem] {
        self.unresolvableSecrets() + self.secretPermissionProblems()
    }

    /// Secrets that cannot be read now: an unset environment variable, a missing or unreadable
    /// file, an unreadable service-account file. A running proxy may still get them later (a
    /// mounted secret appears), so these are warnings at start-up.
    public func unresolvableSecrets() -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        for (path, secret) in self.secrets {
            do {
                _ = try secret.resolve()
            } catch {
                problems.append(
                    contentsOf: error.problems.map { ConfigurationProblem(path: path, message: $0.message) }
                )
            }
        }
        for name in self.providers.keys.sorted() {
            if let file = self.providers[name]?.serviceAccountFile, ConfigurationFile.stamp(path: file) == nil {
                let path = ConfigurationPath.join(ConfigurationPath.join("providers", name), "service_account_file")
                problems.append(ConfigurationProblem(path: path, message: "cannot read \(file)"))
            }
        }
        return problems
    }

    /// Secret files and service-account files that group or others may read or write, and a
    /// token store file or directory open to them or owned by another user (RFC 6819
    /// §5.3.3), each with the command that fixes it. These refuse start-up.
    public func secretPermissionProblems() -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        for (path, secret) in self.secrets {
            if let file = secret.filePath, let problem = Self.permissionProblem(file) {
                problems.append(ConfigurationProblem(path: path, message: problem))
            }
        }
        for name in self.providers.keys.sorted() {
            if let file = self.providers[name]?.serviceAccountFile, let problem = Self.permissionProblem(file) {
                let path = ConfigurationPath.join(ConfigurationPath.join("providers", name), "service_account_file")
                problems.append(ConfigurationProblem(path: path, message: problem))
            }
        }
        if case .file(let file, _) = self.tokenStore {
            do {
                try FileTokenStore(path: file, encryptionKey: nil).checkPermissions()
            } catch {
                problems.append(ConfigurationProblem(path: "token_store.path", message: error.message))
            }
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
