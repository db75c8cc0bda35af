import Foundation

#if canImport(Glibc)
    import Glibc
#endif

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
    package func secretProblems() -> [ConfigurationProblem] {
        self.unresolvableSecrets() + self.secretPermissionProblems()
    }

    /// Secrets that cannot be read now: an unset environment variable, a missing or unreadable
    /// file, an unreadable service-account file. A running proxy may still get them later (a
    /// mounted secret appears), so these are warnings at start-up.
    package func unresolvableSecrets() -> [ConfigurationProblem] {
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

    /// Secret files that belong to another user and that group or others may read: how
    /// Kubernetes (root-owned, `0644` by default) and Docker (`0444` under `/run/secrets`)
    /// mount secrets. This user cannot change their mode, and nobody but their owner can
    /// change their contents, so they are used; `check` names them so that the choice is seen.
    package func sharedSecretFiles() -> [ConfigurationProblem] {
        var notes: [ConfigurationProblem] = []
        for (path, file) in self.secretFiles {
            guard let stamp = ConfigurationFile.stamp(path: file), stamp.owner != Self.processOwner,
                stamp.permissions & 0o044 != 0, stamp.permissions & 0o002 == 0
            else { continue }
            let mode = String(stamp.permissions & 0o777, radix: 8)
            let message =
                "\(file) belongs to uid \(stamp.owner) and is readable by group or others (mode 0\(mode)): "
                + "used as a secret mounted by the platform"
            notes.append(ConfigurationProblem(path: path, message: message))
        }
        return notes
    }

    /// Every secret given as a file, and every service-account file, with its JSON path.
    var secretFiles: [(path: String, file: String)] {
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

    /// The effective user id files are compared with.
    private static var processOwner: UInt32 { UInt32(geteuid()) }

    /// Why the secret file at `file` (symbolic links followed, as a mounted secret's
    /// `..data` links are) must not be used, with the command that fixes it, or `nil` when it
    /// may be used or does not exist:
    /// - writable by others: anyone could replace the secret (`chmod o-w`);
    /// - this user's own file open to group or others: this user can close it (`chmod 600`).
    /// A file of another user that others may only read is a platform's mount: see
    /// ``sharedSecretFiles()``.
    static func permissionProblem(_ file: String) -> String? {
        guard let stamp = ConfigurationFile.stamp(path: file) else { return nil }
        let mode = String(stamp.permissions & 0o777, radix: 8)
        if stamp.permissions & 0o002 != 0 {
            let fix = stamp.owner == Self.processOwner ? "chmod 600 \(file)" : "chmod o-w \(file) (as its owner)"
            return "\(file) is writable by others (mode 0\(mode)); fix it with: \(fix)"
        }
        guard stamp.owner == Self.processOwner, stamp.permissions & 0o066 != 0 else { return nil }
        return "\(file) is readable or writable by group or others (mode 0\(mode)); fix it with: chmod 600 \(file)"
    }
}
