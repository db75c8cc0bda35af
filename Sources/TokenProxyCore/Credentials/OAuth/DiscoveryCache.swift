import Foundation
import Synchronization

/// OpenID Connect Discovery and RFC 8414 metadata for one provider's `issuer`, fetched once
/// and cached; a failure is not cached, so the next token request tries again.
///
/// The document at `{issuer}/.well-known/openid-configuration` is tried first, then
/// `https://host/.well-known/oauth-authorization-server{path}` (RFC 8414 §3). Its `issuer`
/// must equal the configured one (RFC 8414 §3.3), and endpoints must be https unless the
/// provider allows insecure endpoints.
final class DiscoveryCache: Sendable {
    private let issuer: String
    private let allowPlainHTTP: Bool
    private let caFile: String?
    private let fetcher: UpstreamFetcher
    private let cached = Mutex<DiscoveredEndpoints?>(nil)

    init(issuer: String, allowPlainHTTP: Bool, caFile: String?, fetcher: UpstreamFetcher) {
        var issuer = issuer
        while issuer.hasSuffix("/") {
            issuer.removeLast()
        }
        self.issuer = issuer
        self.allowPlainHTTP = allowPlainHTTP
        self.caFile = caFile
        self.fetcher = fetcher
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

    /// The endpoints, fetched on first use.
    func endpoints(completion: @escaping @Sendable (Result<DiscoveredEndpoints, ProxyError>) -> Void) {
        if let known = self.cached.withLock({ $0 }) {
            completion(.success(known))
            return
        }
        self.fetch(self.documentURLs[...], lastError: nil, completion: completion)
    }

    private func fetch(
        _ urls: ArraySlice<String>,
        lastError: ProxyError?,
        completion: @escaping @Sendable (Result<DiscoveredEndpoints, ProxyError>) -> Void
    ) {
        guard let url = urls.first else {
            completion(.failure(lastError ?? ProxyError(.tokenUnavailable, "discovery failed")))
            return
        }
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/json")
        let request = UpstreamFetcher.Request(
            method: "GET",
            url: url,
            headers: headers,
            allowPlainHTTP: self.allowPlainHTTP,
            caFile: self.caFile
        )
        self.fetcher.fetch(request) { [self] result in
            switch result.flatMap({ self.parse($0, url: url) }) {
            case .success(let endpoints):
                self.cached.withLock { $0 = endpoints }
                completion(.success(endpoints))
            case .failure(let error):
                self.fetch(urls.dropFirst(), lastError: error, completion: completion)
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
        for (key, path) in [
            ("token_endpoint", \DiscoveredEndpoints.tokenEndpoint),
            ("authorization_endpoint", \DiscoveredEndpoints.authorizationEndpoint),
            ("device_authorization_endpoint", \DiscoveredEndpoints.deviceAuthorizationEndpoint),
            ("revocation_endpoint", \DiscoveredEndpoints.revocationEndpoint),
        ] {
            guard let value = object[key] as? String else { continue }
            guard
                value.lowercased().hasPrefix("https://")
                    || (self.allowPlainHTTP && value.lowercased().hasPrefix("http://"))
            else {
                return failure("\(key) is not https")
            }
            endpoints[keyPath: path] = value
        }
        return .success(endpoints)
    }
}
