import Dispatch
import TokenProxyHTTP
import TokenProxySupport

/// One request and its response on a client connection.
///
/// An exchange is confined to its connection's ``context``: every method must be called
/// holding it, and every callback runs holding it. Work on another thread hops back with
/// ``QueueBound`` (or runs in place through it when the connection is idle). The body is
/// pulled: nothing is read from the client until ``readBody(_:)`` is called (which is also
/// when `100 Continue` is sent), and ``pauseBody()`` stops reading from the socket, so a
/// slow consumer slows the client.
/// Writing is pushed with back-pressure: when ``isWritable`` turns false, wait for
/// ``onWritable``.
package final class HTTPExchange {
    /// The request head, already checked for framing.
    package let head: HTTPRequestHead
    /// The client's numeric address, or `unix`.
    package let remoteAddress: String
    /// The connection's context, which the exchange is confined to.
    package let context: SerialContext
    /// When the head was complete, for durations in the access log and the metrics.
    package let startTime: MonotonicTime

    /// Called when the output buffer drained after ``isWritable`` was false.
    package var onWritable: (() -> Void)?
    /// Called once if the connection ends before the response finished (client gone, reset).
    package var onClose: (() -> Void)?
    /// Told once when the exchange ends, for access logs and metrics, and when the connection
    /// ended first. An object rather than closures: what serves the request can be its
    /// observer, so that a request allocates no record or closure context for either.
    package var observer: (any HTTPExchangeObserver)?
    /// Fields that handlers add to the exchange's access-log line (the error code and reason
    /// of an answer the proxy made itself).
    package var logFields: [String: String] = [:]

    private weak var connection: (any HTTPExchangeConnection)?
    /// The handler's body callback; when it is called is the connection's state machine's
    /// decision.
    private var bodyHandler: ((RequestBodyEvent) -> Void)?
    /// Whether ``sendHead(_:)`` (or ``respond(_:)``) was called.
    var responseStarted: Bool { self.responseStatus != nil }
    /// Whether ``finish()``, ``respond(_:)`` or ``abort()`` was called, or the connection
    /// ended: the handler's side of the exchange is over, and later calls are ignored.
    package private(set) var isComplete = false
    /// The response status sent (nil before the head), for the access log.
    package private(set) var responseStatus: Int?
    /// Body bytes handed to ``sendBody(_:)``.
    package private(set) var responseBodyBytes = 0
    /// Request body bytes handed to the body reader (through a tunnel: every byte the client
    /// sent after the upgrade).
    package private(set) var requestBodyBytes = 0
    /// Whether the response switched protocols: the connection is a tunnel
    /// (``upgrade(_:)``).
    package private(set) var isTunnel = false

    init(
        head: HTTPRequestHead,
        remoteAddress: String,
        context: SerialContext,
        connection: any HTTPExchangeConnection
    ) {
        self.head = head
        self.remoteAddress = remoteAddress
        self.context = context
        self.connection = connection
        self.startTime = .now
    }

    /// Starts delivering the request body to `handler`: bytes as they arrive, then `.end`.
    /// A request without a body gets `.end` at once.
    package func readBody(_ handler: @escaping (RequestBodyEvent) -> Void) {
        self.assertInContext()
        guard self.bodyHandler == nil, !self.isComplete else { return }
        self.bodyHandler = handler
        self.connection?.exchangeReadBody(self)
    }

    /// Stops reading the body from the client until ``resumeBody()``.
    package func pauseBody() {
        self.assertInContext()
        self.connection?.exchangePauseBody(self)
    }

    /// Resumes reading the body.
    package func resumeBody() {
        self.assertInContext()
        self.connection?.exchangeResumeBody(self)
    }

    /// Whether more body bytes can be sent without growing the output buffer past its mark;
    /// false once the exchange ended (the client may have gone), so that a producer's
    /// `while isWritable` loop stops.
    package var isWritable: Bool {
        self.assertInContext()
        guard !self.isComplete else { return false }
        return self.connection?.isWritable ?? false
    }

    /// Sends the response head. The connection adds the framing fields.
    package func sendHead(_ head: HTTPResponseHead) {
        self.assertInContext()
        guard !self.responseStarted, !self.isComplete else { return }
        self.responseStatus = head.status
        self.connection?.exchangeSendHead(self, head, closeConnection: false)
    }

    /// Answers `101 Switching Protocols` with `head` (its `Upgrade` and `Connection` fields
    /// go out as they are) and turns the connection into a tunnel (RFC 9110 §7.8): from now
    /// on ``readBody(_:)`` delivers every byte the client sends, and ``sendBody(_:)`` writes
    /// bytes as they are. ``endTunnelOutput()`` passes the other side's end on;
    /// ``finish()`` ends the tunnel and the connection.
    package func upgrade(_ head: HTTPResponseHead) {
        self.assertInContext()
        guard !self.responseStarted, !self.isComplete, head.status == 101 else { return }
        self.responseStatus = 101
        self.isTunnel = true
        self.connection?.exchangeUpgrade(self, head)
    }

    /// The tunnel's other side ended: the client's receiving side is shut once what is
    /// queued went out, and the client may go on sending.
    package func endTunnelOutput() {
        self.assertInContext()
        guard self.isTunnel, !self.isComplete else { return }
        self.connection?.exchangeEndTunnelOutput(self)
    }

    /// Sends part of the response body.
    /// Bytes beyond an announced `Content-Length` are not sent: the exchange is aborted.
    package func sendBody(_ bytes: [UInt8]) {
        // A method of its own for the buffers the request path sends: the generic one below,
        // called from another module, is not specialized there.
        bytes.withUnsafeBytes { self.sendBody(raw: $0) }
    }

    /// As the method above, for any collection of bytes.
    package func sendBody(_ bytes: some Collection<UInt8>) {
        let sent: Void? = bytes.withContiguousStorageIfAvailable { self.sendBody(raw: UnsafeRawBufferPointer($0)) }
        if sent == nil {
            Array(bytes).withUnsafeBytes { self.sendBody(raw: $0) }
        }
    }

    private func sendBody(raw bytes: UnsafeRawBufferPointer) {
        self.assertInContext()
        guard self.responseStarted, !self.isComplete else { return }
        self.responseBodyBytes += bytes.count
        self.connection?.exchangeSendBody(self, bytes)
    }

    /// Ends the response. A body shorter than the `Content-Length` its head announced cannot
    /// be finished: the connection is aborted instead (reported as not finished).
    package func finish() {
        self.assertInContext()
        guard self.responseStarted, !self.isComplete else { return }
        self.isComplete = true
        let finished = self.connection?.exchangeFinish(self) ?? true
        self.complete(finished: finished)
    }

    /// Runs `body` with the writes it makes coalesced into one flush at its end: for
    /// producers that have a head, body parts and the end at hand together.
    package func batch(_ body: (HTTPExchange) -> Void) {
        self.assertInContext()
        guard let connection = self.connection else {
            body(self)
            return
        }
        connection.batch { body(self) }
    }

    /// Sends a complete in-memory response and finishes.
    package func respond(_ response: HTTPResponse) {
        self.assertInContext()
        guard !self.responseStarted, !self.isComplete else { return }
        if let error = response.error {
            // The proxy's own answer: its code (and for a 502 or 504 its reason) go to the
            // access line.
            for field in ErrorResponse.logFields(for: error) {
                self.logFields[field.key] = field.value
            }
        }
        self.responseStatus = response.head.status
        self.responseBodyBytes = response.body.count
        self.isComplete = true
        if let connection = self.connection {
            connection.batch {
                connection.exchangeSendHead(self, response.head, closeConnection: response.closeConnection)
                response.body.withUnsafeBytes { connection.exchangeSendBody(self, $0) }
                connection.exchangeFinish(self)
            }
        }
        self.complete(finished: true)
    }

    /// Ends the exchange without completing the response: the client connection is closed,
    /// so the client can tell the body is incomplete (never a fake complete body).
    package func abort() {
        self.assertInContext()
        guard !self.isComplete else { return }
        self.isComplete = true
        self.connection?.exchangeAbort(self)
        self.complete(finished: false)
    }

    /// Called by the connection when it ends before the exchange completed.
    func connectionClosed() {
        guard !self.isComplete else { return }
        self.isComplete = true
        let callback = self.onClose
        self.onClose = nil
        callback?()
        self.observer?.exchangeConnectionClosed(self)
        self.complete(finished: false)
    }

    /// Ends the exchange for its owner. Every callback is dropped here: they usually capture
    /// objects that hold the exchange (a transfer, a handler), and keeping them would make
    /// each finished exchange a reference cycle.
    private func complete(finished: Bool) {
        let observer = self.observer
        self.observer = nil
        self.onClose = nil
        self.onWritable = nil
        self.bodyHandler = nil
        observer?.exchangeCompleted(self, finished: finished)
    }

    private func assertInContext() {
        precondition(self.context.isCurrent, "an exchange was used outside its connection's context")
    }

    /// Called by the connection with body bytes or the end, when its state machine says the
    /// reader takes them.
    func deliverBody(_ event: RequestBodyEvent) {
        if case .bytes(let bytes) = event {
            self.requestBodyBytes += bytes.count
        }
        self.bodyHandler?(event)
    }
}

@available(*, unavailable)
extension HTTPExchange: Sendable {}

/// Who learns that an exchange ended, and owns what serves it until then: the exchange holds
/// its observer strongly and drops it when it ends. Called on the exchange's context.
package protocol HTTPExchangeObserver: AnyObject {
    /// The connection ended before the exchange completed (the client left, or the
    /// connection failed); ``exchangeCompleted(_:finished:)`` follows at once. Called after
    /// the exchange's ``HTTPExchange/onClose``.
    func exchangeConnectionClosed(_ exchange: HTTPExchange)

    /// The exchange ended: `finished` is `true` when the response was finished, `false` when
    /// it was aborted or the connection ended first.
    func exchangeCompleted(_ exchange: HTTPExchange, finished: Bool)
}

extension HTTPExchangeObserver {
    /// An observer that only reports ignores the connection's end until the exchange completes.
    package func exchangeConnectionClosed(_ exchange: HTTPExchange) {}
}
