import TokenProxyHTTP

/// A complete, small response to one of the proxy's own requests (a token endpoint, a
/// discovery document, a revocation).
package struct UpstreamResponse: Sendable, Equatable {
    /// The status code.
    package var status: Int
    /// The header fields, hop-by-hop ones removed.
    package var headers: HTTPHeaders
    /// The whole body.
    package var body: [UInt8]
}
