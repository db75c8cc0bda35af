/// An HTTP version as sent on a request line.
package struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    /// The major version: always 1 once a request has been accepted.
    var major: Int
    /// The minor version: 0 or 1 (higher 1.x minors are answered as 1.1, RFC 9110 §6.2).
    var minor: Int

    /// HTTP/1.0.
    package static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1.
    package static let http1_1 = HTTPVersion(major: 1, minor: 1)

    /// `HTTP/1.1`.
    package var description: String { "HTTP/\(self.major).\(self.minor)" }
}

/// How the request's body is delimited (RFC 9112 §6.3).
package enum RequestFraming: Sendable, Equatable {
    /// No body.
    case none
    /// A body of exactly this many bytes.
    case contentLength(Int64)
    /// A chunked body.
    case chunked
}

/// The form of a request's target (RFC 9112 §3.2).
package enum RequestTargetForm: Sendable, Equatable {
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
package struct HTTPRequestHead: Sendable, Equatable {
    /// The method token, case preserved (methods are case-sensitive, RFC 9110 §9.1).
    package var method: String
    /// The request target exactly as sent.
    package var target: String
    /// The form of ``target``.
    package var targetForm: RequestTargetForm
    /// The path part of the target (origin-form, or the path of an absolute-form target).
    package var path: String
    /// The raw query after `?` (without it), or nil when there is none.
    package var query: String?
    /// The version from the request line.
    package var version: HTTPVersion
    /// The header fields in order.
    package var headers: HTTPHeaders
    /// The first `Host` field's value, read once by the parser (which allows one only).
    package var host: String?
    /// How the body is delimited.
    package var framing: RequestFraming
    /// Whether the client sent `Expect: 100-continue` on an HTTP/1.1 request.
    package var expectsContinue: Bool
    /// Whether the client wants the connection kept open after this exchange
    /// (RFC 9112 §9.3: HTTP/1.1 unless `close`; HTTP/1.0 only with `keep-alive`).
    package var keepAlive: Bool

    /// The authority the request is addressed to: an absolute-form target's authority
    /// (which overrides Host, RFC 9112 §3.2.2), else the Host header.
    package var authority: String? {
        if case .absolute(let authority) = self.targetForm {
            return authority
        }
        return self.host
    }

    /// Whether a response to this request carries no body (HEAD, RFC 9110 §9.3.2).
    package var isHead: Bool { self.method == "HEAD" }
}
