import Foundation

/// Where the admin endpoints (`healthz`, `readyz`, `status`, `metrics`) are served.
package enum AdminConfiguration: Sendable, Equatable, Decodable {
    /// Under this path prefix on the main listener, before any route is matched. Starts with
    /// `/`, has no trailing `/`, and is not `/` itself.
    case pathPrefix(String)
    /// On a listener of their own (then no admin path exists on the main listener).
    case listener(ListenAddress)

    /// The default prefix, `/_tokenproxy`.
    static let defaultPathPrefix = "/_tokenproxy"

    /// The default: ``defaultPathPrefix`` on the main listener.
    static let `default` = AdminConfiguration.pathPrefix(defaultPathPrefix)

    /// Decodes `{"path_prefix": P}` or `{"listen": ADDR}` (not both); `{}` is the default.
    package init(from decoder: any Decoder) throws {
        self = try decoder.withConfigurationProblems { problems in
            let object = try decoder.configurationObject(keyedBy: ConfigurationCodingKey.self, problems)
            _ = decoder.configurationKeys(known: ["path_prefix", "listen"], problems)
            let prefixKey = ConfigurationCodingKey("path_prefix")
            let listenKey = ConfigurationCodingKey("listen")
            let prefix = object.configValue(String.self, forKey: prefixKey, problems)
            let listen = object.configValue(ListenAddress.self, forKey: listenKey, problems)
            if object.contains(prefixKey), object.contains(listenKey) {
                throw decoder.configurationFailure("use either 'path_prefix' or 'listen', not both", problems)
            }
            if let listen { return .listener(listen) }
            if object.contains(listenKey) { throw ConfigurationProblemReported() }
            return .pathPrefix(prefix ?? Self.defaultPathPrefix)
        }
    }
}
