import TokenProxyHTTP

/// Everything the upstream engine needs to send one request: a pure value built from the
/// client's head, the matched route and the credential, with no client framing left in it.
package struct UpstreamRequest: Sendable, Equatable {
    /// How the request body is sent upstream.
    package enum Body: Sendable, Equatable {
        /// No body.
        case none
        /// Exactly this many bytes (`Content-Length`).
        case length(Int64)
        /// A body of unknown length (chunked to an HTTP/1.1 upstream).
        case streamed

        /// Whether body bytes may follow the head: not for no body or an empty one.
        package var sendsBytes: Bool {
            switch self {
            case .none, .length(0): false
            case .length, .streamed: true
            }
        }
    }

    /// The method, as the client sent it.
    package var method: String
    /// The absolute upstream URL, built from parsed parts (see ``UpstreamURL``).
    package var url: String
    /// The header fields to send, in order, none of them hop-by-hop or framing fields.
    package var headers: HTTPHeaders
    /// The body framing.
    package var body: Body

    /// A request of these parts.
    package init(method: String, url: String, headers: HTTPHeaders, body: Body) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// Hop-by-hop fields (RFC 9110 §7.6.1) and fields the engine frames itself; never forwarded.
    package static let hopByHop = HeaderNameSet([
        "connection", "keep-alive", "proxy-authorization", "proxy-authenticate", "proxy-connection", "te",
        "trailer", "transfer-encoding", "upgrade", "content-length", "host", "expect",
    ])
}
