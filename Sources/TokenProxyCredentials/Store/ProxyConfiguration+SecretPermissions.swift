import TokenProxyConfiguration

extension ProxyConfiguration {
    /// Problems with the secrets as they are now on this machine, for start-up and `check`:
    /// every ``unresolvableSecrets()`` and ``secretPermissionProblems()``. Never contains a value.
    func secretProblems() -> [ConfigurationProblem] {
        self.unresolvableSecrets() + self.secretPermissionProblems()
    }

    /// Secret files and service-account files that must not be used (RFC 6819 §5.3.3): one of
    /// this process's user that group or others may read or write, and any file that others
    /// may write; and a token store file or directory open to group or others or owned by
    /// another user. Each names the command that fixes it. These refuse start-up.
    package func secretPermissionProblems() -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        for (path, file) in self.secretFiles {
            if let problem = Self.permissionProblem(file) {
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
}
