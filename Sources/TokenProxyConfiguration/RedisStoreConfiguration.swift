import Foundation

/// A token store on Redis shared by a fleet of proxies (`docs/guide/redis.md`): where the
/// server is, how to log in, the key that seals every value, and the prefix of every key.
package struct RedisStoreConfiguration: Sendable, Equatable {
    /// Where the Redis server listens.
    package enum Address: Sendable, Equatable, CustomStringConvertible {
        /// A host name or IP address and a TCP port.
        case tcp(host: String, port: Int)
        /// A Unix domain socket's path.
        case unix(path: String)

        /// `HOST:PORT` or `unix:PATH`, for messages (never with a password).
        package var description: String {
            switch self {
            case .tcp(let host, let port):
                return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            case .unix(let path):
                return "unix:\(path)"
            }
        }
    }

    /// The server.
    package var address: Address
    /// The ACL user name (Redis 6 `AUTH user password`), from the URL; nil for the default user.
    package var username: String?
    /// The password: `password` when given, else the URL's; nil when the server wants none.
    package var password: Secret?
    /// The logical database (`SELECT`), from the URL's path; 0 by default.
    package var database: Int
    /// The key values are sealed with (AES-256-GCM, the file store's key format).
    package var encryptionKey: Secret
    /// Put before every key the store uses, so several stores can share one server.
    package var keyPrefix: String

    /// The default ``keyPrefix``.
    package static let defaultKeyPrefix = "tokenproxy:"
    /// Redis's default port.
    package static let defaultPort = 6379
    /// The highest database number accepted (Redis's default configuration has 16).
    package static let maxDatabase = 1 << 20

    /// Creates a configuration.
    package init(
        address: Address,
        username: String? = nil,
        password: Secret? = nil,
        database: Int = 0,
        encryptionKey: Secret,
        keyPrefix: String = Self.defaultKeyPrefix
    ) {
        self.address = address
        self.username = username
        self.password = password
        self.database = database
        self.encryptionKey = encryptionKey
        self.keyPrefix = keyPrefix
    }

    /// What a `url` names: the address, the user, the URL's password and the database.
    package struct ParsedURL: Equatable {
        /// The server.
        var address: Address
        /// The URL's user name, percent-decoded; nil when absent or empty.
        var username: String?
        /// The URL's password, percent-decoded; nil when absent.
        var password: String?
        /// The database number from the path; 0 when there is none.
        var database: Int
    }

    /// Parses `redis://[user:password@]HOST[:PORT][/DB]` or `unix:///PATH`; the message says
    /// what is wrong (without repeating a password).
    package static func parse(url text: String) -> Result<ParsedURL, ConfigurationError> {
        func failure(_ message: String) -> Result<ParsedURL, ConfigurationError> {
            .failure(ConfigurationError(message: message))
        }
        if text.hasPrefix("unix://") {
            let path = String(text.dropFirst("unix://".count))
            guard path.hasPrefix("/"), path.count > 1, !path.utf8.contains(0), !path.contains("?") else {
                return failure("expected unix:///ABSOLUTE/PATH of the Redis socket")
            }
            return .success(ParsedURL(address: .unix(path: path), database: 0))
        }
        guard let components = URLComponents(string: text), components.scheme?.lowercased() == "redis" else {
            return failure(
                "expected redis://[user:password@]HOST:PORT[/DB] or unix:///PATH (rediss:// is not supported)"
            )
        }
        guard let host = components.host, !host.isEmpty else { return failure("the URL names no host") }
        guard components.query == nil, components.fragment == nil else {
            return failure("the URL must not have a query or a fragment")
        }
        let port = components.port ?? Self.defaultPort
        guard (1...65535).contains(port) else { return failure("the port must be 1 to 65535") }
        var database = 0
        let path = components.path
        if !path.isEmpty, path != "/" {
            guard let number = Int(path.dropFirst()), path.hasPrefix("/"), (0...Self.maxDatabase).contains(number)
            else { return failure("the path must be a database number, /0 to /\(Self.maxDatabase)") }
            database = number
        }
        let bareHost = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let user = components.user.flatMap { $0.isEmpty ? nil : $0 }
        return .success(
            ParsedURL(
                address: .tcp(host: bareHost, port: port),
                username: user,
                password: components.password,
                database: database
            )
        )
    }
}
