import Foundation
import Synchronization
import TokenProxyConfiguration
import TokenProxyHTTP
import TokenProxySupport
import TokenProxyUpstream

/// OpenID Connect Discovery and RFC 8414 metadata for one provider's `issuer`, fetched once
/// and cached; a failure is not cached, so the next token request tries again.
///
/// The document at `{issuer}/.well-known/openid-configuration` is tried first, then
/// `https://host/.well-known/oauth-authorization-server{path}` (RFC 8414 §3). Its `issuer`
/// must equal the configured one (RFC 8414 §3.3), and endpoints must be https unless the
/// provider allows insecure endpoints.
///
/// One discovery, both documents included, has a whole-life deadline: `requestSeconds`
/// (`limits.token_request_seconds`) unless the caller brings an earlier one (a login's).
final class DiscoveryCache: Sendable {
    private let issuer: String
    private let allowPlainHTTP: Bool
    private let caFile: String?
    private let fetcher: UpstreamFetcher
    private let requestSeconds: Double
    private let headSeconds: Double
    private let idleSeconds: Double
    private let cached = Mutex<DiscoveredEndpoints?>(nil)

    /// Discovery for `issuer`, each discovery done within `requestSeconds` (30 by default,
    /// the default of `limits.token_request_seconds`), a document's head coming within
    /// `headSeconds` and its body pausing at most `idleSeconds` (`limits.endpoint_idle_seconds`).
    init(
        issuer: String,
        allowPlainHTTP: Bool,
        caFile: String?,
        fetcher: UpstreamFetcher,
        requestSeconds: Double = Limits().tokenRequestSeconds,
        headSeconds: Double = Limits().endpointHeadSeconds,
        idleSeconds: Double = Limits().endpointIdleSeconds
    ) {
        var issuer = issuer
        while issuer.hasSuffix("/") {
            issuer.removeLast()
        }
        self.issuer = issuer
        self.allowPlainHTTP = allowPlainHTTP
        self.caFile = caFile
        self.fetcher = fetcher
        self.requestSeconds = requestSeconds
        self.headSeconds = headSeconds
        self.idleSeconds = idleSeconds
    }

    /// The metadata URLs to try, in order.
    var documentURLs: [String] {
        var urls = [self.issuer + "/.well-known/openid-configuration"]
        if let schemeEnd = self.issuer.range(of: "://") {
            let afterScheme = self.issuer[schemeEnd.upperBound...]
            let pathStart = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
            let origin = self.issuer[..<pathStart]
            urls.append(origin + "/.well-known/oauth-authorization-server" + afterScheme[pathStart...])
        }
        return urls
    }

    /// The endpoints, fetched on first use within the cache's own deadline.
    func endpoints(completion: @escaping @Sendable (Result<DiscoveredEndpoints, ProxyError>) -> Void) {
        self.endpoints(deadline: .now + BoundedSeconds.duration(self.requestSeconds), completion: completion)
    }

    /// The endpoints, fetched on first use; the fetch ends by `deadline` or by the cache's
    /// own deadline, whichever comes first.
    func endpoints(
        deadline: ContinuousClock.Instant,
        completion: @escaping @Sendable (Result<DiscoveredEndpoints, ProxyError>) -> Void
    ) {
        if let known = self.cached.withLockedValue({ $0 }) {
            completion(.success(known))
            return
        }
        let end = min(deadline, .now + BoundedSeconds.duration(self.requestSeconds))
        self.fetch(self.documentURLs[...], deadline: end, lastError: nil, completion: completion)
    }

    private func fetch(
        _ urls: ArraySlice<String>,
        deadline: ContinuousClock.Instant,
        lastError: ProxyError?,
        completion: @escaping @Sendable (Result<DiscoveredEndpoints, ProxyError>) -> Void
    ) {
        guard let url = urls.first else {
            completion(.failure(lastError ?? ProxyError(.tokenUnavailable, "discovery failed")))
            return
        }
        let left = deadline - .now
        guard left > .milliseconds(1) else {
            let reason = "discovery at \(url): no time left within the request's deadline"
            completion(.failure(lastError ?? ProxyError(.tokenUnavailable, reason)))
            return
        }
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/json")
        let request = UpstreamFetcher.Request(
            method: "GET",
            url: url,
            headers: headers,
            allowPlainHTTP: self.allowPlainHTTP,
            caFile: self.caFile,
            // The document's whole life: connect, TLS, head and body.
            timeout: Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18,
            headTimeout: self.headSeconds,
            idleTimeout: self.idleSeconds
        )
        self.fetcher.fetch(request) { [self] result in
            switch result.flatMap({ self.parse($0, url: url) }) {
            case .success(let endpoints):
                self.cached.withLockedValue { $0 = endpoints }
                completion(.success(endpoints))
            case .failure(let error):
                self.fetch(urls.dropFirst(), deadline: deadline, lastError: error, completion: completion)
            }
        }
    }

    private func parse(_ response: UpstreamResponse, url: String) -> Result<DiscoveredEndpoints, ProxyError> {
        func failure(_ message: String) -> Result<DiscoveredEndpoints, ProxyError> {
            .failure(ProxyError(.tokenUnavailable, "discovery at \(url): \(message)"))
        }
        guard response.status == 200 else { return failure("HTTP \(response.status)") }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] else {
            return failure("not a JSON object")
        }
        guard let issuer = object["issuer"] as? String,
            issuer.trimmingCharacters(in: ["/"]) == self.issuer.trimmingCharacters(in: ["/"])
        else {
            return failure("the document's issuer is not \(self.issuer)")
        }
        var endpoints = DiscoveredEndpoints()
        endpoints.issuer = issuer
        endpoints.issParameterSupported = object["authorization_response_iss_parameter_supported"] as? Bool ?? false
        // RFC 8705 §5: the endpoints a client presenting a certificate uses instead.
        let aliases = object["mtls_endpoint_aliases"] as? [String: Any] ?? [:]
        for (document, prefix, key, path) in [
            (object, "", "token_endpoint", \DiscoveredEndpoints.tokenEndpoint),
            (object, "", "authorization_endpoint", \DiscoveredEndpoints.authorizationEndpoint),
            (object, "", "device_authorization_endpoint", \DiscoveredEndpoints.deviceAuthorizationEndpoint),
            (object, "", "revocation_endpoint", \DiscoveredEndpoints.revocationEndpoint),
            (aliases, "mtls_endpoint_aliases.", "token_endpoint", \DiscoveredEndpoints.mtlsTokenEndpoint),
            (
                aliases, "mtls_endpoint_aliases.", "device_authorization_endpoint",
                \DiscoveredEndpoints.mtlsDeviceAuthorizationEndpoint
            ),
            (aliases, "mtls_endpoint_aliases.", "revocation_endpoint", \DiscoveredEndpoints.mtlsRevocationEndpoint),
        ] {
            guard let value = document[key] as? String else { continue }
            guard
                value.lowercased().hasPrefix("https://")
                    || (self.allowPlainHTTP && value.lowercased().hasPrefix("http://"))
            else {
                return failure("\(prefix)\(key) is not https")
            }
            endpoints[keyPath: path] = value
        }
        return .success(endpoints)
    }
}
