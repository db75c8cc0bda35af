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
