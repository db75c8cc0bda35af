/// Everything the upstream engine needs to send one request: a pure value built from the
/// client's head, the matched route and the credential, with no client framing left in it.
public struct UpstreamRequest: Sendable, Equatable {
    /// How the request body is sent upstream.
    public enum Body: Sendable, Equatable {
        /// No body.
        case none
        /// Exactly this many bytes (`Content-Length`).
        case length(Int64)
        /// A body of unknown length (chunked to an HTTP/1.1 upstream).
        case streamed
    }

    /// The method, as the client sent it.
    public var method: String
    /// The absolute upstream URL, built from parsed parts (see ``UpstreamURL``).
    public var url: String
    /// The header fields to send, in order, none of them hop-by-hop or framing fields.
    public var headers: HTTPHeaders
    /// The body framing.
    public var body: Body

    /// Hop-by-hop fields (RFC 9110 §7.6.1) and fields the engine frames itself; never forwarded.
    static let hopByHop = HeaderNameSet([
        "connection", "keep-alive", "proxy-authorization", "proxy-authenticate", "proxy-connection", "te",
        "trailer", "transfer-encoding", "upgrade", "content-length", "host", "expect",
    ])
}
