import Foundation
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyHTTP
import TokenProxyMetrics
import TokenProxySupport

/// The admin endpoints (`docs/reference/admin-endpoints.md`): `healthz`, `readyz`, `status` and `metrics`.
///
/// Served under the admin path prefix on the proxy's listener, or at the root of a separate
/// admin listener. `status` never contains a secret: it lists names, grants and upstreams;
/// `readyz` reports error codes and the messages a client would get.
package struct AdminEndpoints: Sendable {
    /// The endpoint names, as the last path segment.
    enum Endpoint: String, CaseIterable {
        case healthz
        case readyz
        case status
        case metrics
    }

    private let configuration: ProxyConfiguration
    private let startedAt: Date
    private let openConnections: @Sendable () -> Int
    private let credentials: CredentialRegistry?
    private let metrics: ProxyMetrics?

    /// Creates the endpoints over a configuration snapshot. `credentials` answers `readyz`
    /// (without it, every provider is reported unavailable); `metrics` answers `metrics`.
    package init(
        configuration: ProxyConfiguration,
        startedAt: Date,
        openConnections: @escaping @Sendable () -> Int,
        credentials: CredentialRegistry? = nil,
        metrics: ProxyMetrics? = nil
    ) {
        self.configuration = configuration
        self.startedAt = startedAt
        self.openConnections = openConnections
        self.credentials = credentials
        self.metrics = metrics
    }

    /// Whether `name` (the path below the admin prefix, without its leading slash) is an
    /// endpoint that load balancers and probes may call without the host and header checks.
    package static func isProbe(_ name: String) -> Bool {
        name == Endpoint.healthz.rawValue || name == Endpoint.readyz.rawValue
    }

    /// Answers the endpoint `name` (or a `no_route` error) through `completion`, at once for
    /// every endpoint but `readyz`, which may wait for token requests (a few seconds at most).
    package func respond(
        to name: String,
        method: String,
        completion: @escaping @Sendable (HTTPResponse) -> Void
    ) {
        guard let endpoint = Endpoint(rawValue: name) else {
            completion(ErrorResponse.response(for: ProxyError(.noRoute, "no admin endpoint '\(name)'")))
            return
        }
        guard method == "GET" || method == "HEAD" else {
            completion(
                ErrorResponse.response(for: ProxyError(.methodNotAllowed, "admin endpoints answer GET and HEAD"))
            )
            return
        }
        switch endpoint {
        case .healthz:
            completion(Self.json(HealthDocument(status: "ok")))
        case .readyz:
            ReadinessCheck(
                providers: Array(self.configuration.providers.values),
                credentials: self.credentials,
                timeout: min(ReadinessCheck.defaultTimeout, self.configuration.limits.tokenWaitSeconds)
            ).run(completion: completion)
        case .status:
            completion(Self.json(self.statusDocument()))
        case .metrics:
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: ProxyMetrics.contentType)
            headers.add(name: "Cache-Control", value: "no-store")
            let body = self.metrics?.exposition(openConnections: self.openConnections()) ?? []
            completion(HTTPResponse(status: 200, headers: headers, body: body))
        }
    }

    private struct HealthDocument: Encodable {
        var status: String
    }

    private struct StatusDocument: Encodable {
        struct Route: Encodable {
            var name: String
            var path_prefix: String
            var host: String?
            var upstream: String
            var provider: String?
        }
        struct Provider: Encodable {
            var name: String
            var grant: String
            /// The DPoP key's thumbprint, for a provider with `dpop` once its key is known.
            var dpop_jkt: String?
        }
        var status: String
        var version: String
        var uptime_seconds: Int
        var open_connections: Int
        var routes: [Route]
        var providers: [Provider]
    }

    private func statusDocument() -> StatusDocument {
        StatusDocument(
            status: "serving",
            version: TokenProxyVersion.current,
            uptime_seconds: Int(Date().timeIntervalSince(self.startedAt)),
            open_connections: self.openConnections(),
            routes: self.configuration.routes.map {
                StatusDocument.Route(
                    name: $0.name,
                    path_prefix: $0.pathPrefix,
                    host: $0.host,
                    upstream: $0.upstream,
                    provider: $0.provider
                )
            },
            providers: self.configuration.providers.values.sorted { $0.name < $1.name }.map {
                StatusDocument.Provider(
                    name: $0.name,
                    grant: $0.grant.rawValue,
                    dpop_jkt: self.credentials?.entry($0.name)?.source.proofThumbprint
                )
            }
        )
    }

    /// `response` reduced to its status code, for a probe that failed the host or browser
    /// checks.
    package static func statusOnly(_ response: HTTPResponse) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Cache-Control", value: "no-store")
        return HTTPResponse(status: response.head.status, headers: headers, body: [])
    }

    private static func json(_ value: some Encodable) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Cache-Control", value: "no-store")
        return HTTPResponse(status: 200, headers: headers, body: JSONOutput.encode(value))
    }
}
