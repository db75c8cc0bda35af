/// A response head to send to a client: status and end-to-end header fields.
///
/// The connection adds the framing fields (`Content-Length` or `Transfer-Encoding`,
/// `Connection`) itself; handlers never set them.
public struct HTTPResponseHead: Sendable, Equatable {
    /// The status code.
    public var status: Int
    /// The reason phrase; derived from the status when nil.
    public var reason: String?
    /// End-to-end header fields.
    public var headers: HTTPHeaders
    /// The body length when known in advance; nil means the body is streamed with no length.
    public var contentLength: Int64?
    /// Set by producers that already checked every field the way the encoder would (token
    /// names, values without CR, LF or NUL, no framing fields), so the check is not repeated
    /// for each response. Not part of equality.
    var fieldsChecked = false

    /// Creates a response head.
    public init(status: Int, reason: String? = nil, headers: HTTPHeaders = HTTPHeaders(), contentLength: Int64? = nil) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.contentLength = contentLength
    }

    /// Heads are equal when what they say is equal, however they were checked.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.status == rhs.status && lhs.reason == rhs.reason && lhs.headers == rhs.headers
            && lhs.contentLength == rhs.contentLength
    }

    /// Whether this status never has a body (1xx, 204, 304; RFC 9110 §6.4.1).
    public var forbidsBody: Bool {
        (100..<200).contains(self.status) || self.status == 204 || self.status == 304
    }
}

/// A complete, small response held in memory: errors and admin documents.
public struct HTTPResponse: Sendable, Equatable {
    /// Status, headers and the body's length.
    public var head: HTTPResponseHead
    /// The whole body.
    public var body: [UInt8]
    /// Whether the connection must close after this response.
    public var closeConnection: Bool

    /// Creates a response whose `Content-Length` is the body's size.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8], closeConnection: Bool = false) {
        self.head = HTTPResponseHead(status: status, headers: headers, contentLength: Int64(body.count))
        self.body = body
        self.closeConnection = closeConnection
    }
}

/// Standard reason phrases for the statuses the proxy produces or commonly relays.
enum ReasonPhrase {
    /// The reason phrase for `status`, or "Unknown" (clients ignore it, RFC 9112 §4).
    static func `for`(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 417: return "Expectation Failed"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return "Unknown"
        }
    }
}
