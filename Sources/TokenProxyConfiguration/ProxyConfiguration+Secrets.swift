import Foundation

extension ProxyConfiguration {
    /// Every secret in the configuration with its JSON path, in a stable order.
    var secrets: [(path: String, secret: Secret)] {
        var secrets: [(path: String, secret: Secret)] = []
        if let requirement = self.requireHeader { secrets.append(("require_header.value", requirement.value)) }
        if case .file(_, let key?) = self.tokenStore { secrets.append(("token_store.encryption_key", key)) }
        if case .redis(let redis) = self.tokenStore {
            if let password = redis.password { secrets.append(("token_store.redis.password", password)) }
            secrets.append(("token_store.redis.encryption_key", redis.encryptionKey))
        }
        for name in self.providers.keys.sorted() {
            guard let provider = self.providers[name] else { continue }
            for (key, field) in ProviderConfiguration.secretKeys {
                if let secret = provider[keyPath: field] {
                    secrets.append((ConfigurationPath.join(ConfigurationPath.join("providers", name), key), secret))
                }
            }
            if let key = provider.dpop?.key {
                let path = ConfigurationPath.join(
                    ConfigurationPath.join(ConfigurationPath.join("providers", name), "dpop"),
                    "key"
                )
                secrets.append((path, key))
            }
        }
        for (index, route) in self.routes.enumerated() {
            if let key = route.clientKey {
                secrets.append((ConfigurationPath.join(ConfigurationPath.index("routes", index), "client_key"), key))
            }
        }
        return secrets
    }

    /// Secrets that cannot be read now: an unset environment variable, a missing or unreadable
    /// file, an unreadable service-account file. A running proxy may still get them later (a
    /// mounted secret appears), so these are warnings at start-up. A file the ownership and
    /// mode rules refuse is left to the token store's permission check.
    package func unresolvableSecrets() -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        for (path, secret) in self.secrets {
            if let file = secret.filePath, Self.permissionProblem(file) != nil { continue }
            do {
                _ = try secret.resolve()
            } catch {
                problems.append(
                    contentsOf: error.problems.map { ConfigurationProblem(path: path, message: $0.message) }
                )
            }
        }
        for name in self.providers.keys.sorted() {
            guard let file = self.providers[name]?.serviceAccountFile else { continue }
            do {
                _ = try SecretFilePath.check(file, rules: .current, maxBytes: Secret.maxFileBytes)
            } catch {
                // A refusal is reported by the permission check (Credentials).
                guard error.code == .unreadable else { continue }
                let path = ConfigurationPath.join(ConfigurationPath.join("providers", name), "service_account_file")
                problems.append(ConfigurationProblem(path: path, message: error.message))
            }
        }
        return problems
    }

    /// Secret files that belong to another user and that group or others may read: how
    /// Kubernetes (root-owned, `0644` by default) and Docker (`0444` under `/run/secrets`)
    /// mount secrets. This user cannot change their mode, and nobody but their owner can
    /// change their contents, so they are used; `check` names them so that the choice is seen.
    package func sharedSecretFiles() -> [ConfigurationProblem] {
        let rules = SecretFileRules.current
        var notes: [ConfigurationProblem] = []
        for (path, file) in self.secretFiles {
            guard let status = try? SecretFilePath.check(file, rules: rules, maxBytes: Secret.maxFileBytes).status,
                status.owner != rules.user, status.permissions & 0o044 != 0
            else { continue }
            let message =
                "\(file) belongs to uid \(status.owner) and is readable by group or others "
                + "(mode \(status.octalPermissions)): used as a secret mounted by the platform"
            notes.append(ConfigurationProblem(path: path, message: message))
        }
        return notes
    }

    /// Every secret given as a file, and every service-account file, with its JSON path.
    package var secretFiles: [(path: String, file: String)] {
        var files: [(path: String, file: String)] = []
        for (path, secret) in self.secrets {
            if let file = secret.filePath { files.append((path, file)) }
        }
        for name in self.providers.keys.sorted() {
            if let file = self.providers[name]?.serviceAccountFile {
                files.append(
                    (ConfigurationPath.join(ConfigurationPath.join("providers", name), "service_account_file"), file)
                )
            }
        }
        return files
    }

    /// Why the secret file at `file` must not be used, with the fix, or `nil` when it may be
    /// used or cannot be read now (``unresolvableSecrets()`` reports that): the rules of
    /// ``SecretFileRules``, the same ones every read applies. A file of another user that
    /// others may only read is a platform's mount: see ``sharedSecretFiles()``.
    package static func permissionProblem(_ file: String) -> String? {
        do {
            _ = try SecretFilePath.check(file, rules: .current, maxBytes: Secret.maxFileBytes)
            return nil
        } catch {
            return error.code == .refused ? error.message : nil
        }
    }
}
