import Foundation
import TokenProxySupport

/// Checks the URLs of a configuration: route upstreams and provider endpoints.
///
/// Messages describe the URL's problem without quoting it: a URL may carry credentials in its
/// user information or query, and messages never contain secrets.
enum ConfigurationURL {
    /// Whether a valid URL uses https (else it is http).
    enum Security {
        /// `https://`: TLS, credentials may be sent.
        case https
        /// `http://`: plain text.
        case http
    }

    /// Checks `text` as an absolute http(s) URL: a host, no user information, no fragment, and
    /// a query only when `allowsQuery` (OAuth endpoints may have one, RFC 6749 §3.1; upstreams
    /// may not, since the client's query is appended to them). Returns whether it is https.
    static func check(_ text: String, allowsQuery: Bool) -> Result<Security, URLProblem> {
        if text.isEmpty { return .failure(URLProblem("must not be empty")) }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            return .failure(URLProblem("must be an absolute URL such as https://host/path"))
        }
        let security: Security
        switch scheme {
        case "https": security = .https
        case "http": security = .http
        default: return .failure(URLProblem("must be an http or https URL"))
        }
        // The host as written (``URLHost``): `URLComponents` would process it through ICU.
        guard let host = URLHost.written(in: text), !host.isEmpty else {
            return .failure(URLProblem("must be an absolute URL with a host, such as https://host/path"))
        }
        if components.user != nil || components.password != nil {
            return .failure(URLProblem("must not contain user information (user:password@); use a provider instead"))
        }
        if let port = components.port, !(1...65535).contains(port) {
            return .failure(URLProblem("has an invalid port (must be 1 to 65535)"))
        }
        if components.fragment != nil {
            return .failure(URLProblem("must not contain a fragment (#...)"))
        }
        if components.query != nil, !allowsQuery {
            return .failure(URLProblem("must not contain a query (?...); the client's query is passed through"))
        }
        return .success(security)
    }

    /// The reason a URL was refused.
    struct URLProblem: Error {
        /// The message, without the URL.
        var message: String

        /// Creates a problem with `message`.
        init(_ message: String) {
            self.message = message
        }
    }
}
