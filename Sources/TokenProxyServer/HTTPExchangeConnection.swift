import TokenProxyHTTP

/// What an ``HTTPExchange`` asks of the connection it belongs to: the request body, and
/// writing the response. ``HTTPConnection`` conforms whatever its transport, so that an
/// exchange is one type for every transport and its handlers never see which one is under it.
protocol HTTPExchangeConnection: AnyObject {
    /// The exchange's handler asked for the request body.
    func exchangeReadBody(_ exchange: HTTPExchange)

    /// The exchange's handler paused the request body.
    func exchangePauseBody(_ exchange: HTTPExchange)

    /// The exchange's handler resumed the request body.
    func exchangeResumeBody(_ exchange: HTTPExchange)

    /// Whether the output buffer is below its high mark.
    var isWritable: Bool { get }

    /// Queues the response head.
    func exchangeSendHead(_ exchange: HTTPExchange, _ head: HTTPResponseHead, closeConnection: Bool)

    /// Writes body bytes within the framing the head announced. The bytes are passed as one
    /// contiguous buffer, so the encoder stays specialized behind the protocol.
    func exchangeSendBody(_ exchange: HTTPExchange, _ bytes: UnsafeRawBufferPointer)

    /// Ends the response; returns false when the body fell short of the announced length.
    @discardableResult
    func exchangeFinish(_ exchange: HTTPExchange) -> Bool

    /// Queues a `101` head and turns the connection into a tunnel.
    func exchangeUpgrade(_ exchange: HTTPExchange, _ head: HTTPResponseHead)

    /// Shuts the client's receiving side once queued bytes went out.
    func exchangeEndTunnelOutput(_ exchange: HTTPExchange)

    /// Ends the exchange without completing its response.
    func exchangeAbort(_ exchange: HTTPExchange)

    /// Runs `body` with writes coalesced into one flush at its end.
    func batch(_ body: () -> Void)
}
