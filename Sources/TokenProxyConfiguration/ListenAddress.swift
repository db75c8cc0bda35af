import Foundation

/// Where the proxy (or its admin listener) accepts connections: a TCP address or a Unix socket.
package enum ListenAddress: Sendable, Equatable, Hashable, Decodable, CustomStringConvertible {
    /// A TCP address. `host` is an IPv4 literal, an IPv6 literal without brackets, or a name
    /// such as `localhost`; port 0 asks the system for an ephemeral port.
    case inet(host: String, port: UInt16)
    /// A Unix domain socket at `path` (created with mode 0600).
    case unix(path: String)

    /// The longest socket path `sockaddr_un` holds, without its terminating NUL.
    #if canImport(Darwin)
        static let maxUnixPathBytes = 103
    #else
        static let maxUnixPathBytes = 107
    #endif

    /// Parses `host:port`, `[v6]:port` or `unix:/path`.
    ///
    /// The host is a dotted-quad IPv4 address, a bracketed IPv6 address (no zone index), or a
    /// host name; the port is 0 to 65535. A Unix socket path is non-empty and fits in
    /// `sockaddr_un`. Errors have an empty path and say what form is expected.
    package init(parsing text: String) throws(ConfigurationError) {
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst("unix:".count))
            if path.isEmpty {
                throw ConfigurationError(message: "a Unix socket address needs a path, as in unix:/run/tokenproxy.sock")
            }
            if path.utf8.contains(0) {
                throw ConfigurationError(message: "a Unix socket path must not contain NUL")
            }
            if path.utf8.count > Self.maxUnixPathBytes {
                throw ConfigurationError(
                    message: "a Unix socket path must be at most \(Self.maxUnixPathBytes) bytes long"
                )
            }
            self = .unix(path: path)
            return
        }
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw ConfigurationError(message: "an IPv6 address is missing its closing ']', as in [::1]:8080")
            }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else {
                throw ConfigurationError(message: "missing port: expected [IPv6]:PORT, as in [::1]:8080")
            }
            portText = rest.dropFirst()
            guard ConfigurationSyntax.ipv6Bytes(String(host)) != nil else {
                throw ConfigurationError(message: "not a valid IPv6 address between '[' and ']'")
            }
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw ConfigurationError(message: "missing port: expected HOST:PORT, [IPv6]:PORT or unix:/path")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") {
                throw ConfigurationError(message: "an IPv6 address must be in brackets, as in [::1]:8080")
            }
            if host.isEmpty {
                throw ConfigurationError(
                    message: "missing host: use 127.0.0.1:PORT (or 0.0.0.0:PORT for every interface)"
                )
            }
            let isNumeric = host.allSatisfy { ConfigurationSyntax.isDigit($0) || $0 == "." }
            if isNumeric ? !ConfigurationSyntax.isIPv4(String(host)) : !ConfigurationSyntax.isHostName(String(host)) {
                throw ConfigurationError(message: "not a valid IPv4 address or host name before the port")
            }
        }
        guard let port = ConfigurationSyntax.port(portText) else {
            throw ConfigurationError(message: "the port must be a number from 0 to 65535")
        }
        self = .inet(host: String(host), port: port)
    }

    /// Whether only this machine can connect: 127.0.0.0/8, `::1` (also IPv4-mapped
    /// `::ffff:127.x.y.z`), the name `localhost`, and every Unix socket.
    package var isLoopback: Bool {
        switch self {
        case .unix:
            return true
        case .inet(let host, _):
            if host.lowercased() == "localhost" || host.lowercased() == "localhost." { return true }
            if ConfigurationSyntax.isIPv4(host) { return host.hasPrefix("127.") }
            guard let bytes = ConfigurationSyntax.ipv6Bytes(host) else { return false }
            let loopback: [UInt8] = Array(repeating: 0, count: 15) + [1]
            let mappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF]
            return bytes == loopback || (Array(bytes[0..<12]) == mappedPrefix && bytes[12] == 127)
        }
    }

    /// The parse form: `host:port`, `[v6]:port` or `unix:/path`.
    package var description: String {
        switch self {
        case .unix(let path):
            return "unix:\(path)"
        case .inet(let host, let port):
            return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        }
    }

    /// Decodes the string form (see ``init(parsing:)``).
    package init(from decoder: any Decoder) throws {
        self = try decoder.withConfigurationProblems { problems in
            guard let text = try? decoder.singleValueContainer().decode(String.self) else {
                let found = ConfigurationJSONKind.probe(decoder).map { ", found \($0)" } ?? ""
                throw decoder.configurationFailure(
                    "expected \(ConfigurationTypeName.of(ListenAddress.self))\(found)",
                    problems
                )
            }
            do throws(ConfigurationError) {
                return try ListenAddress(parsing: text)
            } catch {
                let message = error.problems.map(\.message).joined(separator: "; ")
                throw decoder.configurationFailure(message, problems)
            }
        }
    }
}
