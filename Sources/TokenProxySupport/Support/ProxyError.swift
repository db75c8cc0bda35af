/// An error the proxy answers a client with itself, rather than relaying an upstream's answer.
///
/// Every such error has a stable machine-readable ``code`` (the `error` member of the JSON
/// body and the `X-Tokenproxy-Error` header, `docs/contributing/architecture.md`, "Errors"), a
/// human-readable message and, where known, the route and provider it concerns. Mapping a code to its HTTP status
/// happens only in ``ProxyError/Code/status``; rendering the body only in ``ErrorResponse``.
package struct ProxyError: Error, Sendable, Equatable, CustomStringConvertible, ErrorCodeFamily {
    /// A stable code of this family (``ErrorCode``).
    package typealias Code = ErrorCode<ProxyError>

    /// The cases behind the codes; use the ``Code`` values.
    package enum Base: String, Sendable, CaseIterable {
        case badRequest = "bad_request"
        case loginRequired = "login_required"
        case hostNotAllowed = "host_not_allowed"
        case headerRequired = "header_required"
        case crossSiteRequest = "cross_site_request"
        case noRoute = "no_route"
        case methodNotAllowed = "method_not_allowed"
        case requestTimeout = "request_timeout"
        case uriTooLong = "uri_too_long"
        case headersTooLarge = "headers_too_large"
        case versionNotSupported = "http_version_not_supported"
        case tokenUnavailable = "token_unavailable"
        case upstreamUnreachable = "upstream_unreachable"
        case shuttingDown = "shutting_down"
        case tooManyConnections = "too_many_connections"
        case upstreamTimeout = "upstream_timeout"
        case bodyTooLarge = "body_too_large"
        case upgradeNotAllowed = "upgrade_not_allowed"
        case tooManyTunnels = "too_many_tunnels"
    }

    /// What went wrong, as a stable code.
    package var code: Code
    /// A sentence for people; never contains a secret.
    package var message: String
    /// The route's name, when a route was matched.
    package var route: String?
    /// The provider's name, when a provider was involved.
    package var provider: String?

    /// Creates an error with its code, message and optional route and provider names.
    package init(_ code: Code, _ message: String, route: String? = nil, provider: String? = nil) {
        self.code = code
        self.message = message
        self.route = route
        self.provider = provider
    }

    /// `code: message`, for logs.
    package var description: String { "\(self.code): \(self.message)" }
}

extension ErrorCode where Family == ProxyError {
    /// 400: the request is malformed or ambiguous (RFC 9112 framing, forbidden characters).
    package static let badRequest = Self(.badRequest)
    /// 401: the route's provider has no usable grant; `tokenproxy login NAME` is needed.
    package static let loginRequired = Self(.loginRequired)
    /// 403: the `Host` (or absolute-form authority) is not an allowed host.
    package static let hostNotAllowed = Self(.hostNotAllowed)
    /// 403: the configured `require_header` is missing or wrong.
    package static let headerRequired = Self(.headerRequired)
    /// 403: a browser request from another site (`Origin`, `Sec-Fetch-Site`).
    package static let crossSiteRequest = Self(.crossSiteRequest)
    /// 404: no route matches the request.
    package static let noRoute = Self(.noRoute)
    /// 405: CONNECT and TRACE are never served.
    package static let methodNotAllowed = Self(.methodNotAllowed)
    /// 408: the request head did not arrive within the header deadline.
    package static let requestTimeout = Self(.requestTimeout)
    /// 414: the request line is longer than `limits.max_request_line_bytes`.
    package static let uriTooLong = Self(.uriTooLong)
    /// 431: the header section exceeds `limits.max_header_bytes` or `max_header_count`.
    package static let headersTooLarge = Self(.headersTooLarge)
    /// 505: a well-formed request line naming an HTTP major version other than 1.
    package static let versionNotSupported = Self(.versionNotSupported)
    /// 502: the provider's token endpoint failed.
    package static let tokenUnavailable = Self(.tokenUnavailable)
    /// 502: the upstream could not be reached or failed before answering.
    package static let upstreamUnreachable = Self(.upstreamUnreachable)
    /// 503: the proxy is draining connections before exit.
    package static let shuttingDown = Self(.shuttingDown)
    /// 503: `limits.max_connections` is reached.
    package static let tooManyConnections = Self(.tooManyConnections)
    /// 504: the upstream did not answer within its timeout.
    package static let upstreamTimeout = Self(.upstreamTimeout)
    /// 413: a body the proxy must hold whole (a form body an OAuth 1 provider signs) is larger
    /// than `limits.replay_buffer_bytes`.
    package static let bodyTooLarge = Self(.bodyTooLarge)
    /// 400: the request asks to upgrade to a protocol its route does not pass through
    /// (`upgrade_protocols`).
    package static let upgradeNotAllowed = Self(.upgradeNotAllowed)
    /// 503: `limits.max_tunnels` upgraded connections are open already.
    package static let tooManyTunnels = Self(.tooManyTunnels)

    /// The HTTP status this code is answered with: the one place that mapping lives.
    package var status: Int {
        switch self.base {
        case .badRequest, .upgradeNotAllowed: return 400
        case .loginRequired: return 401
        case .hostNotAllowed, .headerRequired, .crossSiteRequest: return 403
        case .noRoute: return 404
        case .methodNotAllowed: return 405
        case .requestTimeout: return 408
        case .uriTooLong: return 414
        case .headersTooLarge: return 431
        case .versionNotSupported: return 505
        case .tokenUnavailable, .upstreamUnreachable: return 502
        case .shuttingDown, .tooManyConnections, .tooManyTunnels: return 503
        case .upstreamTimeout: return 504
        case .bodyTooLarge: return 413
        }
    }

    /// Whether the request's framing may be in doubt after this error, so the connection
    /// must close once the answer is sent (400, 408, 413, 414, 431: `docs/reference/http-behaviour.md`).
    package var closesConnection: Bool {
        switch self.base {
        case .badRequest, .requestTimeout, .uriTooLong, .headersTooLarge, .versionNotSupported,
            .tooManyConnections, .shuttingDown, .bodyTooLarge:
            return true
        default:
            return false
        }
    }
}
