/// An HTTP version as sent on a request line.
public struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    /// The major version: always 1 once a request has been accepted.
    public var major: Int
    /// The minor version: 0 or 1 (higher 1.x minors are answered as 1.1, RFC 9110 §6.2).
    public var minor: Int

    /// HTTP/1.0.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    /// `HTTP/1.1`.
    public var description: String { "HTTP/\(self.major).\(self.minor)" }
}

/// How the request's body is delimited (RFC 9112 §6.3).
public enum RequestFraming: Sendable, Equatable {
    /// No body.
    case none
    /// A body of exactly this many bytes.
    case contentLength(Int64)
    /// A chunked body.
    case chunked
}

/// The form of a request's target (RFC 9112 §3.2).
public enum RequestTargetForm: Sendable, Equatable {
    /// `/path?query`.
    case origin
    /// `http://authority/path?query`; the parsed authority is kept.
    case absolute(authority: String)
    /// `host:port`, as CONNECT uses.
    case authority
    /// `*`, as `OPTIONS *` uses.
    case asterisk
}

/// A parsed and framing-checked request head.
public struct HTTPRequestHead: Sendable, Equatable {
    /// The method token, case preserved (methods are case-sensitive, RFC 9110 §9.1).
    public var method: String
    /// The request target exactly as sent.
    public var target: String
    /// The form of ``target``.
    public var targetForm: RequestTargetForm
    /// The path part of the target (origin-form, or the path of an absolute-form target).
    public var path: String
    /// The raw query after `?` (without it), or nil when there is none.
    public var query: String?
    /// The version from the request line.
    public var version: HTTPVersion
    /// The header fields in order.
    public var headers: HTTPHeaders
    /// How the body is delimited.
    public var framing: RequestFraming
    /// Whether the client sent `Expect: 100-continue` on an HTTP/1.1 request.
    public var expectsContinue: Bool
    /// Whether the client wants the connection kept open after this exchange
    /// (RFC 9112 §9.3: HTTP/1.1 unless `close`; HTTP/1.0 only with `keep-alive`).
    public var keepAlive: Bool

    /// The authority the request is addressed to: an absolute-form target's authority
    /// (which overrides Host, RFC 9112 §3.2.2), else the Host header.
    public var authority: String? {
        if case .absolute(let authority) = self.targetForm {
            return authority
        }
        return self.headers.first("Host")
    }

    /// Whether a response to this request carries no body (HEAD, RFC 9110 §9.3.2).
    public var isHead: Bool { self.method == "HEAD" }
}
