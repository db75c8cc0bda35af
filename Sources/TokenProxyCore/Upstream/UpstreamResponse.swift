import Synchronization

/// A complete, small response to one of the proxy's own requests (a token endpoint, a
/// discovery document, a revocation).
public struct UpstreamResponse: Sendable, Equatable {
    /// The status code.
    public var status: Int
    /// The header fields, hop-by-hop ones removed.
    public var headers: HTTPHeaders
    /// The whole body.
    public var body: [UInt8]
}
