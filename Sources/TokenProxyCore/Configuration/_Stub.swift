// TEMPORARY stand-in until the Configuration subsystem lands; deleted then.
import Foundation

public enum Secret: Sendable, Equatable {
    case literal(String)
    case environment(String)
    case file(String)
    public func resolve() throws -> String {
        switch self {
        case .literal(let s): return s
        case .environment(let n): return ProcessInfo.processInfo.environment[n] ?? ""
        case .file(let p): return (try? String(contentsOfFile: p, encoding: .utf8)) ?? ""
        }
    }
}

public enum ListenAddress: Sendable, Equatable, CustomStringConvertible {
    case inet(host: String, port: UInt16)
    case unix(path: String)
    public var isLoopback: Bool { true }
    public init(parsing: String) throws { self = .inet(host: "127.0.0.1", port: 0) }
    public var description: String {
        switch self {
        case .inet(let h, let p): return h.contains(":") ? "[\(h)]:\(p)" : "\(h):\(p)"
        case .unix(let p): return "unix:\(p)"
        }
    }
}

public struct HeaderRequirement: Sendable, Equatable {
    public var name: String
    public var value: Secret
}

public enum AdminConfiguration: Sendable, Equatable {
    case pathPrefix(String)
    case listener(ListenAddress)
}

public struct Limits: Sendable, Equatable {
    public var tokenWaitSeconds: Double = 15
    public var maxHeaderBytes: Int = 65536
    public var maxHeaderCount: Int = 100
    public var maxRequestLineBytes: Int = 8192
    public var maxChunkExtensionBytes: Int = 16384
    public var headerTimeoutSeconds: Double = 10
    public var idleTimeoutSeconds: Double = 60
    public var replayBufferBytes: Int = 1_048_576
    public var maxConnections: Int = 1024
    public var upstreamConnectTimeoutSeconds: Double = 10
    public var upstreamFirstByteTimeoutSeconds: Double = 60
    public var drainTimeoutSeconds: Double = 30
    public init() {}
}

public enum IncomingAuthorization: String, Sendable, Equatable { case replace, keep, reject }

public struct RouteConfiguration: Sendable, Equatable {
    public var name: String
    public var pathPrefix: String
    public var host: String?
    public var upstream: String
    public var stripPrefix: Bool = true
    public var provider: String?
    public var allowInsecureUpstream = false
    public var incomingAuthorization: IncomingAuthorization = .replace
    public var retryOn401 = true
    public var preserveHost = false
}

public enum GrantType: String, Sendable, Equatable, CaseIterable {
    case clientCredentials = "client_credentials", staticToken = "static"
}

public struct ProviderConfiguration: Sendable, Equatable {
    public var name: String
    public var grant: GrantType
}

public struct ProxyConfiguration: Sendable, Equatable {
    public var listen: ListenAddress = .inet(host: "127.0.0.1", port: 8080)
    public var allowRemoteClients = false
    public var allowedHosts: [String] = ["localhost", "127.0.0.1", "[::1]", "::1"]
    public var requireHeader: HeaderRequirement?
    public var admin: AdminConfiguration = .pathPrefix("/_tokenproxy")
    public var limits = Limits()
    public var providers: [String: ProviderConfiguration] = [:]
    public var routes: [RouteConfiguration] = []
}
public struct ConfigurationProblem: Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var message: String
    public var description: String { "\(path): \(message)" }
}
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var problems: [ConfigurationProblem]
    public var description: String { problems.map(\.description).joined(separator: "\n") }
}
extension ProxyConfiguration {
    public static func defaultPath(environment: [String: String]) -> String { environment["TOKENPROXY_CONFIG"] ?? "./proxy.json" }
    public static func load(path: String) throws(ConfigurationError) -> ProxyConfiguration { ProxyConfiguration() }
    public var warnings: [ConfigurationProblem] { [] }
    public func routeTable() -> String { "" }
}
extension ProxyConfiguration {
    public static func decode(_ data: Data) throws(ConfigurationError) -> ProxyConfiguration { ProxyConfiguration() }
}
