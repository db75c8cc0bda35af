import TokenProxySupport

/// A complete, small response held in memory: errors and admin documents.
package struct HTTPResponse: Sendable, Equatable {
    /// Status, headers and the body's length.
    package var head: HTTPResponseHead
    /// The whole body.
    package var body: [UInt8]
    /// Whether the connection must close after this response.
    package var closeConnection: Bool
    /// The error this response answers, when it is the proxy's own error answer
    /// (``ErrorResponse``): what the access line names it by.
    package var error: ProxyError?

    /// Creates a response whose `Content-Length` is the body's size.
    package init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8], closeConnection: Bool = false) {
        self.head = HTTPResponseHead(status: status, headers: headers, contentLength: Int64(body.count))
        self.body = body
        self.closeConnection = closeConnection
    }
}
