import Foundation

/// Where tokens (refresh tokens, access tokens, expiries) are kept between runs.
package enum TokenStoreConfiguration: Sendable, Equatable, Decodable {
    /// Tokens live only in memory: every restart needs new tokens (and interactive grants a new login).
    case memory
    /// A JSON file written atomically with mode 0600, its directories created 0700; encrypted
    /// with AES-GCM under a key derived from `encryptionKey` when one is given.
    case file(path: String, encryptionKey: Secret?)
    /// A Redis server shared by several proxies, every value sealed with AES-GCM
    /// (`docs/guide/redis.md`).
    case redis(RedisStoreConfiguration)

    /// The default store: `$XDG_STATE_HOME/tokenproxy/tokens.json`, where `XDG_STATE_HOME`
    /// defaults to `$HOME/.local/state` (and is ignored when relative, as the XDG Base
    /// Directory specification says).
    package static func defaultPath(environment: [String: String]) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return Self.join(state, "tokenproxy/tokens.json")
        }
        return Self.join(Self.home(environment: environment), ".local/state/tokenproxy/tokens.json")
    }

    /// The default: a file at ``defaultPath(environment:)``, not encrypted.
    static func defaultStore(environment: [String: String]) -> TokenStoreConfiguration {
        .file(path: Self.defaultPath(environment: environment), encryptionKey: nil)
    }

    /// `$HOME`, else the user's home directory from the password database.
    static func home(environment: [String: String]) -> String {
        if let home = environment["HOME"], !home.isEmpty { return home }
        return FileManager.default.homeDirectoryForCurrentUser.path
    }

    private static func join(_ directory: String, _ relative: String) -> String {
        directory.hasSuffix("/") ? directory + relative : directory + "/" + relative
    }

    /// Decodes `"memory"`, `{"path": P, "encryption_key": SECRET}` (both keys optional; the
    /// path defaults to ``defaultPath(environment:)``) or `{"redis": {...}}`
    /// (``RedisStoreConfiguration/decode(_:at:_:)``).
    package init(from decoder: any Decoder) throws {
        self = try decoder.withConfigurationProblems { problems in
            if let text = try? decoder.singleValueContainer().decode(String.self) {
                guard text == "memory" else {
                    throw decoder.configurationFailure(
                        "expected \"memory\", {\"path\": ...} or {\"redis\": ...}",
                        problems
                    )
                }
                return .memory
            }
            let object = try decoder.configurationObject(keyedBy: ConfigurationCodingKey.self, problems)
            if object.contains(ConfigurationCodingKey("redis")) {
                _ = decoder.configurationKeys(known: ["redis"], problems)
                let key = ConfigurationCodingKey("redis")
                // Its problems are recorded already.
                guard let redis = object.configValue(RedisStoreConfiguration.self, forKey: key, problems) else {
                    throw ConfigurationProblemReported()
                }
                return .redis(redis)
            }
            _ = decoder.configurationKeys(known: ["path", "encryption_key"], problems)
            let path = object.configValue(String.self, forKey: ConfigurationCodingKey("path"), problems)
            let key = object.configValue(Secret.self, forKey: ConfigurationCodingKey("encryption_key"), problems)
            return .file(path: path ?? Self.defaultPath(environment: problems.environment), encryptionKey: key)
        }
    }
}
