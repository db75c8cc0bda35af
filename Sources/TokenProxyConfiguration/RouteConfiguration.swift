import Foundation

/// One route (`routes[i]`): requests whose path starts with `pathPrefix` (and whose Host
/// matches `host`, when set) go to `upstream`, with `provider`'s credential.
package struct RouteConfiguration: Sendable, Equatable {
    /// `name`: used in logs, metrics and error bodies. Defaults to the path prefix.
    package var name: String
    /// `path_prefix`: starts with `/`; matching is segment-aware (`/gh` does not match
    /// `/ghost`) and the longest prefix wins. A trailing `/` (other than the root's) is
    /// removed when decoding: `/github/` and `/github` are the same route.
    package var pathPrefix: String
    /// `host`: when set, the request's Host must also match (stored lowercased; compared
    /// case-insensitively).
    package var host: String?
    /// `upstream`: absolute http(s) base URL; the path remainder is appended to its path.
    package var upstream: String
    /// `strip_prefix`: remove `path_prefix` before appending the path to `upstream`. Default true.
    package var stripPrefix: Bool
    /// `provider`: name of the provider whose credential is injected; `nil` forwards without one.
    package var provider: String?
    /// `allow_insecure_upstream`: allow an `http://` upstream with a provider. Default false.
    package var allowInsecureUpstream: Bool
    /// `incoming_authorization`: what to do with a client's own `Authorization`. Default `replace`.
    package var incomingAuthorization: IncomingAuthorization
    /// `retry_on_401`: renew the token and replay once when the upstream answers 401. Default true.
    package var retryOn401: Bool
    /// `renew_on_status`: the upstream statuses that renew the token and replay once (with
    /// `retry_on_401`), for an API that answers a revoked or expired token with another
    /// status than 401 (`[401, 403]`). Default `[401]`: a 403 such as `insufficient_scope`
    /// (RFC 6750 §3.1), which a new token of the same scopes cannot fix, is relayed.
    package var renewOnStatus: [Int]
    /// `preserve_host`: send the client's Host upstream instead of the upstream's authority. Default false.
    package var preserveHost: Bool
    /// `ca_file`: PEM trust anchors for the upstream (default: system CAs).
    package var caFile: String?
    /// `client_cert`: PEM client certificate file for mTLS to the upstream.
    package var clientCert: String?
    /// `client_key`: the client certificate's PEM private key, a secret (usually
    /// `{"file": "/path/key.pem"}`); absent means the key is in the `client_cert` file.
    package var clientKey: Secret?
    /// `timeout_seconds`: this route's upstream first-byte timeout (request sent → response
    /// head), replacing `limits.upstream_first_byte_timeout_seconds`; a streamed body is not cut.
    package var timeoutSeconds: Double?
    /// `add_headers`: headers set on every upstream request (replacing a client's own).
    package var addHeaders: [String: String]
    /// `remove_headers`: client headers removed before forwarding (case-insensitive).
    package var removeHeaders: [String]
    /// `upgrade_protocols`: the `Upgrade` tokens (RFC 9110 §7.8) this route passes through
    /// as a tunnel, compared case-insensitively; `[]` refuses every upgrade. Default
    /// `["websocket"]` (`docs/guide/websocket.md`).
    package var upgradeProtocols: [String]

    /// Creates a route; every omitted argument has its configuration default, and the name
    /// defaults to the path prefix.
    package init(
        name: String? = nil,
        pathPrefix: String,
        host: String? = nil,
        upstream: String,
        stripPrefix: Bool = true,
        provider: String? = nil,
        allowInsecureUpstream: Bool = false,
        incomingAuthorization: IncomingAuthorization = .replace,
        retryOn401: Bool = true,
        renewOnStatus: [Int] = [401],
        preserveHost: Bool = false,
        caFile: String? = nil,
        clientCert: String? = nil,
        clientKey: Secret? = nil,
        timeoutSeconds: Double? = nil,
        addHeaders: [String: String] = [:],
        removeHeaders: [String] = [],
        upgradeProtocols: [String] = ["websocket"]
    ) {
        self.name = name ?? pathPrefix
        self.pathPrefix = pathPrefix
        self.host = host
        self.upstream = upstream
        self.stripPrefix = stripPrefix
        self.provider = provider
        self.allowInsecureUpstream = allowInsecureUpstream
        self.incomingAuthorization = incomingAuthorization
        self.retryOn401 = retryOn401
        self.renewOnStatus = renewOnStatus
        self.preserveHost = preserveHost
        self.caFile = caFile
        self.clientCert = clientCert
        self.clientKey = clientKey
        self.timeoutSeconds = timeoutSeconds
        self.addHeaders = addHeaders
        self.removeHeaders = removeHeaders
        self.upgradeProtocols = upgradeProtocols
    }

    /// Every JSON key of a route.
    static let keys = [
        "name", "path_prefix", "host", "upstream", "strip_prefix", "provider", "allow_insecure_upstream",
        "incoming_authorization", "retry_on_401", "renew_on_status", "preserve_host", "ca_file", "client_cert",
        "client_key",
        "timeout_seconds", "add_headers", "remove_headers", "upgrade_protocols",
    ]

    /// `prefix` without a trailing `/`, except for the root `/` itself.
    static func normalizedPrefix(_ prefix: String) -> String {
        var prefix = Substring(prefix)
        while prefix.count > 1, prefix.hasSuffix("/") { prefix = prefix.dropLast() }
        return String(prefix)
    }
}

extension RouteConfiguration: Decodable {
    /// Decodes one route object, recording every problem; a missing `path_prefix` or
    /// `upstream` is reported by validation.
    package init(from decoder: any Decoder) throws {
        self = try decoder.withConfigurationProblems { problems in
            let object = try decoder.configurationObject(keyedBy: ConfigurationCodingKey.self, problems)
            _ = decoder.configurationKeys(known: Self.keys, problems)
            func value<T: Decodable>(_ key: String, _ type: T.Type) -> T? {
                assert(Self.keys.contains(key), "\(key) is missing from RouteConfiguration.keys")
                return object.configValue(type, forKey: ConfigurationCodingKey(key), problems)
            }
            let prefix = Self.normalizedPrefix(value("path_prefix", String.self) ?? "")
            return RouteConfiguration(
                name: value("name", String.self) ?? prefix,
                pathPrefix: prefix,
                host: value("host", String.self)?.lowercased(),
                upstream: value("upstream", String.self) ?? "",
                stripPrefix: value("strip_prefix", Bool.self) ?? true,
                provider: value("provider", String.self),
                allowInsecureUpstream: value("allow_insecure_upstream", Bool.self) ?? false,
                incomingAuthorization: object.configEnum(
                    IncomingAuthorization.self,
                    forKey: ConfigurationCodingKey("incoming_authorization"),
                    problems
                ) ?? .replace,
                retryOn401: value("retry_on_401", Bool.self) ?? true,
                renewOnStatus: object.configList(Int.self, forKey: ConfigurationCodingKey("renew_on_status"), problems)
                    ?? [401],
                preserveHost: value("preserve_host", Bool.self) ?? false,
                caFile: value("ca_file", String.self),
                clientCert: value("client_cert", String.self),
                clientKey: value("client_key", Secret.self),
                timeoutSeconds: value("timeout_seconds", Double.self),
                addHeaders: object.configMap(String.self, forKey: ConfigurationCodingKey("add_headers"), problems)
                    ?? [:],
                removeHeaders: object.configList(
                    String.self,
                    forKey: ConfigurationCodingKey("remove_headers"),
                    problems
                )
                    ?? [],
                upgradeProtocols: object.configList(
                    String.self,
                    forKey: ConfigurationCodingKey("upgrade_protocols"),
                    problems
                ) ?? ["websocket"]
            )
        }
    }
}
