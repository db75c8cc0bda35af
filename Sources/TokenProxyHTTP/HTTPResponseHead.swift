/// A response head to send to a client: status and end-to-end header fields.
///
/// The connection adds the framing fields (`Content-Length` or `Transfer-Encoding`,
/// `Connection`) itself; handlers never set them.
package struct HTTPResponseHead: Sendable, Equatable {
    /// The status code.
    package var status: Int
    /// The reason phrase; derived from the status when nil.
    package var reason: String?
    /// End-to-end header fields.
    package var headers: HTTPHeaders
    /// The body length when known in advance; nil means the body is streamed with no length.
    package var contentLength: Int64?
    /// Set by producers that already checked every field the way the encoder would (token
    /// names, values without CR, LF or NUL, no framing fields), so the check is not repeated
    /// for each response. Not part of equality.
    package var fieldsChecked = false

    /// Creates a response head.
    package init(status: Int, reason: String? = nil, headers: HTTPHeaders = HTTPHeaders(), contentLength: Int64? = nil)
    {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.contentLength = contentLength
    }

    /// Heads are equal when what they say is equal, however they were checked.
    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.status == rhs.status && lhs.reason == rhs.reason && lhs.headers == rhs.headers
            && lhs.contentLength == rhs.contentLength
    }

    /// Whether this status never has a body (1xx, 204, 304; RFC 9110 §6.4.1).
    package var forbidsBody: Bool {
        (100..<200).contains(self.status) || self.status == 204 || self.status == 304
    }
}
