import ArgumentParser
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyMetrics

/// Loading the configuration the same way for every command: every problem printed with its
/// JSON path and exit 2 on error; secret files that others can read refused (RFC 6819
/// §5.3.3). Warnings are printed by `check` and `serve` only, so that `token` and `status`
/// in scripts print nothing but their answer and real errors.
enum ConfigLoader {
    /// Loads and validates `path`, applying `listen` when given; prints the warnings when
    /// `printWarnings`.
    static func load(_ path: String, listen: String? = nil, printWarnings: Bool = false) throws -> ProxyConfiguration {
        var configuration: ProxyConfiguration
        do {
            configuration = try ProxyConfiguration.load(path: path)
            if let listen {
                configuration.listen = try ListenAddress(parsing: listen)
                try configuration.validate()
            }
        } catch {
            self.report(path, error.problems)
            throw ExitStatus.configError
        }
        let refused = configuration.secretPermissionProblems()
        guard refused.isEmpty else {
            self.report(path, refused)
            throw ExitStatus.configError
        }
        if printWarnings {
            for warning in configuration.warnings + configuration.unresolvableSecrets() {
                Console.warning("\(warning)")
            }
        }
        return configuration
    }

    /// The token store the configuration names, checked before use: one that cannot be
    /// decrypted or is open to others refuses start-up (exit 2); a corrupt one was moved
    /// aside, which is reported, and the store starts empty. `sharedOnly` (one-shot commands):
    /// a Redis store that cannot be reached refuses too, since nothing would outlive the
    /// process.
    static func openStore(
        _ configuration: ProxyConfiguration,
        metrics: ProxyMetrics? = nil,
        sharedOnly: Bool = false
    ) throws -> any TokenStore {
        let store = configuration.tokenStore.makeStore(metrics: metrics, sharedOnly: sharedOnly)
        do {
            _ = try store.read()
        } catch {
            if error.code == .corrupt || error.code == .unsupportedVersion {
                Console.error("error: \(error)")
            } else if error.code == .unavailable {
                Console.error("\(error)")
                throw ExitStatus.runtimeFailure
            } else {
                Console.error("\(error)")
                throw ExitStatus.configError
            }
        }
        return store
    }

    private static func report(_ path: String, _ problems: [ConfigurationProblem]) {
        Console.problems(
            "\(path): \(problems.count) problem\(problems.count == 1 ? "" : "s"):",
            problems.map { "\($0)" }
        )
    }
}
