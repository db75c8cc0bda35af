import TokenProxySupport

/// The whole life of one client connection as a pure state machine: waiting for a head,
/// the active exchange (its request body, `100 Continue`, its reader pausing the socket, the
/// response), keep-alive or close, the lingering close, which input deadline runs, when the
/// socket is read, and when output waiting for the client runs against the send deadline.
/// ``HTTPConnection`` feeds it events and carries out the returned ``Action``s; it does no
/// I/O and keeps no bytes.
///
/// Only one exchange is active at a time. Bytes of a pipelined next request stay buffered
/// until the current response is complete, so answers go out in request order.
struct ConnectionStateMachine: Sendable {
    private enum State: Sendable, Equatable {
        /// Waiting for the next head; `partial` once any of its bytes arrived.
        case awaitingHead(partial: Bool)
        /// An exchange is active.
        case exchange(Exchange)
        /// The exchange's answer switched protocols (101): the connection is a byte tunnel,
        /// no longer parsed as HTTP, until its exchange ends it.
        case tunnel(Tunnel)
        /// The last answer is queued (the response asked for the close, the request was
        /// rejected, or the exchange was aborted): the lingering close begins once the
        /// output has drained.
        case closing
        /// Our sending side is shut; what the client still sends is dropped until its EOF or
        /// the linger deadline.
        case lingering
        /// Closed; nothing more happens.
        case closed
    }

    private var state: State = .awaitingHead(partial: false)
    /// Whether the proxy is shutting down: no exchange keeps the connection after it.
    private var draining = false
    /// Whether the client closed its sending side (read returned 0).
    private var inputClosed = false
    /// Whether the socket is being read (the read source is resumed).
    private(set) var isReading = false
    /// Whether output waits for the socket to take it (the write source is resumed and the
    /// send deadline runs).
    private(set) var isWaitingForWritable = false

    /// An upgraded connection's state: the exchange's reading, and each direction's end.
    struct Tunnel: Sendable, Equatable {
        /// The client's sending side.
        enum Input: Sendable, Equatable {
            /// Open.
            case open
            /// Closed (read returned 0); the exchange was not told yet.
            case ended
            /// Closed, and the exchange was told, once.
            case endDelivered
        }

        /// Our sending side.
        enum Output: Sendable, Equatable {
            /// Open.
            case open
            /// The other side ended: ours shuts once the output drained.
            case endsWhenDrained
            /// Shut.
            case shut
        }

        /// The exchange asked for the client's bytes.
        var reading = false
        /// The exchange paused the client's bytes (the other side is slow to take them).
        var paused = false
        /// How far the client's end got.
        var input = Input.open
        /// How far the other side's end got.
        var output = Output.open
    }

    /// Whether the connection is between exchanges with no byte of a next request received.
    var isIdle: Bool { self.state == .awaitingHead(partial: false) && !self.isWaitingForWritable }

    /// Whether the connection has been told to close.
    var isClosing: Bool {
        switch self.state {
        case .closing, .lingering, .closed: return true
        case .awaitingHead, .exchange, .tunnel: return false
        }
    }

    /// Whether the connection is closed.
    var isClosed: Bool { self.state == .closed }

    /// Whether the connection is an upgraded tunnel.
    var isTunnel: Bool {
        if case .tunnel = self.state { return true }
        return false
    }

    /// What the parser should be fed next.
    var expectedInput: ExpectedInput {
        switch self.state {
        case .awaitingHead: return .head
        case .exchange(let exchange): return exchange.parsesBody ? .body : .nothing
        case .tunnel(let tunnel): return tunnel.reading && !tunnel.paused ? .tunnel : .nothing
        case .closing, .lingering, .closed: return .nothing
        }
    }

    // MARK: Input

    /// The connection was accepted: the first head is due within the header deadline.
    mutating func accepted() -> Action {
        .arm(.header)
    }

    /// Bytes were read from the socket.
    mutating func bytesReceived() -> Action {
        switch self.state {
        case .exchange(let exchange) where exchange.isStreaming:
            return .armAndParse(.body)
        case .tunnel:
            return .armAndParse(.tunnel)
        case .awaitingHead, .exchange, .closing:
            return .parse
        case .lingering:
            return .discardInput
        case .closed:
            return .none
        }
    }

    /// Bytes of a head arrived while awaiting one.
    mutating func headBytesReceived() -> Action {
        guard case .awaitingHead(partial: false) = self.state else { return .none }
        self.state = .awaitingHead(partial: true)
        // The idle deadline gives way to the header deadline at the first byte.
        return .arm(.header)
    }

    /// A complete head was parsed; `keepAlive` is the client's wish, `hasBody` its framing,
    /// `expectsContinue` its `Expect: 100-continue`.
    mutating func headReceived(keepAlive: Bool, hasBody: Bool, expectsContinue: Bool = false) -> Action {
        switch self.state {
        case .awaitingHead:
            let exchange = Exchange(
                keepAlive: keepAlive && !self.draining,
                hasBody: hasBody,
                expectsContinue: expectsContinue
            )
            self.state = .exchange(exchange)
            return .arm(hasBody ? .body : .none)
        case .exchange, .tunnel, .closing, .lingering, .closed:
            return .none
        }
    }

    /// The parser reached the end of the request body.
    mutating func requestEnded() -> Action {
        self.withExchange { $0.requestBodyEnded() }
    }

    /// The parser found the request malformed; the framing of the stream is lost.
    mutating func requestMalformed(_ error: ProxyError) -> Action {
        switch self.state {
        case .awaitingHead:
            self.state = .closing
            return .rejectRequest(error)
        case .exchange(let exchange):
            // Once the response started, an error answer cannot follow it.
            guard !exchange.responseStarted else { return .abortExchange }
            self.state = .closing
            return .rejectRequest(error)
        case .tunnel, .closing, .lingering, .closed:
            return .none
        }
    }

    /// The client closed its sending side (read returned 0).
    mutating func inputEnded() -> Action {
        self.inputClosed = true
        switch self.state {
        case .awaitingHead:
            self.state = .closed
            return .closeNow
        case .exchange:
            // The client went away during the exchange (a body cut short, or a client that
            // gave up waiting): the exchange is aborted, which ends its upstream transfer and
            // frees the connection, as nginx does unless told to ignore client aborts.
            self.state = .closed
            return .closeNow
        case .tunnel(var tunnel):
            // A half-close: the exchange passes it on and ends the tunnel when both sides
            // have ended.
            if tunnel.input == .open {
                tunnel.input = .ended
            }
            self.state = .tunnel(tunnel)
            return .deliverTunnelInput
        case .lingering:
            // The client read our answer and closed too.
            self.state = .closed
            return .closeNow
        case .closing, .closed:
            return .none
        }
    }

    // MARK: The exchange's handler

    /// The handler asked for the request body.
    mutating func bodyRequested() -> Action {
        if case .tunnel(var tunnel) = self.state {
            guard !tunnel.reading else { return .none }
            tunnel.reading = true
            self.state = .tunnel(tunnel)
            return .deliverTunnelInput
        }
        return self.withExchange { $0.bodyRequested() }
    }

    /// The handler paused the request body: the socket is not read while it has bytes to come.
    mutating func bodyPaused() -> Action {
        if case .tunnel(var tunnel) = self.state {
            tunnel.paused = true
            self.state = .tunnel(tunnel)
            return .none
        }
        return self.withExchange {
            $0.bodyPaused()
            return .none
        }
    }

    /// The handler resumed the request body.
    mutating func bodyResumed() -> Action {
        if case .tunnel(var tunnel) = self.state {
            guard tunnel.paused else { return .none }
            tunnel.paused = false
            self.state = .tunnel(tunnel)
            return .deliverTunnelInput
        }
        return self.withExchange { $0.bodyResumed() }
    }

    // MARK: The tunnel

    /// The exchange's answer switched protocols (RFC 9110 §15.2.2) and its head is queued:
    /// from now on the connection carries bytes both ways, unparsed, with the tunnel's idle
    /// deadline. Input waits until the exchange asks for it (``bodyRequested()``); buffered
    /// input (sent after the request head) is the tunnel's first.
    mutating func upgraded() -> Action {
        guard case .exchange = self.state else { return .none }
        var tunnel = Tunnel()
        tunnel.input = self.inputClosed ? .ended : .open
        self.state = .tunnel(tunnel)
        return .arm(.tunnel)
    }

    /// Whether the client's end of input is due to the exchange now: it ended, the exchange
    /// reads, and it was not delivered yet. Marks it delivered.
    mutating func takeTunnelInputEnd() -> Bool {
        guard case .tunnel(var tunnel) = self.state, tunnel.reading, !tunnel.paused, tunnel.input == .ended
        else { return false }
        tunnel.input = .endDelivered
        self.state = .tunnel(tunnel)
        return true
    }

    /// The tunnel's other side sent its last byte: once the output drained, our sending side
    /// is shut (a half-close passed on), and the client may go on sending.
    mutating func tunnelOutputEnded() -> Action {
        guard case .tunnel(var tunnel) = self.state, tunnel.output == .open else { return .none }
        tunnel.output = .endsWhenDrained
        self.state = .tunnel(tunnel)
        return .shutdownOutputWhenDrained
    }

    /// Bytes from the tunnel's other side were queued for the client: the tunnel is not idle.
    mutating func tunnelBytesQueued() -> Action {
        guard case .tunnel = self.state else { return .none }
        return .arm(.tunnel)
    }

    /// The response head is about to be written. Returns whether the connection stays open
    /// after it, which the head must announce.
    mutating func responseStarted(closeRequested: Bool) -> Bool {
        switch self.state {
        case .exchange(var exchange):
            // A body nobody reads cannot be skipped safely: announce the close up front.
            let stays =
                exchange.keepAlive && !closeRequested && !exchange.leavesBodyUnread && !self.draining
                && !self.inputClosed
            exchange.responseStarts(keepAlive: stays)
            self.state = .exchange(exchange)
            return stays
        case .awaitingHead, .tunnel, .closing, .lingering, .closed:
            return false
        }
    }

    /// The response's framing cannot be kept alive (an HTTP/1.0 answer of unknown length):
    /// the connection closes after it.
    mutating func responseEndsWithTheConnection() {
        switch self.state {
        case .exchange(var exchange):
            exchange.keepAlive = false
            self.state = .exchange(exchange)
        case .awaitingHead, .tunnel, .closing, .lingering, .closed:
            break
        }
    }

    /// The response is completely queued for writing.
    mutating func responseFinished() -> Action {
        switch self.state {
        case .exchange(let exchange):
            // A response that ends before its request body was read leaves unread bytes whose
            // framing we would have to trust; close instead.
            guard !exchange.isStreaming, exchange.keepAlive, !self.draining, !self.inputClosed else {
                self.state = .closing
                return .closeAfterFlush
            }
            self.state = .awaitingHead(partial: false)
            return .parseBuffered(.idle)
        case .tunnel:
            // A tunnel never goes back to HTTP: it ends with the connection.
            self.state = .closing
            return .closeAfterFlush
        case .awaitingHead, .closing, .lingering, .closed:
            return .none
        }
    }

    /// The exchange was aborted: what is queued goes out, then the connection closes, so the
    /// client sees the response break off rather than complete.
    mutating func exchangeAborted() -> Action {
        switch self.state {
        case .exchange, .tunnel:
            self.state = .closing
            return .flushAndClose
        case .awaitingHead, .closing, .lingering, .closed:
            return .none
        }
    }

    // MARK: Reading and writing the socket

    /// Whether the socket should be read now, as an action when that changes. Reading goes on
    /// while the client is slow to take its answer (docs/contributing/architecture.md, "Reading goes on");
    /// it stops for a full input buffer (`inputBufferFull`), a paused request body with bytes
    /// to come, or the client's EOF. A lingering connection reads until the client closes.
    mutating func readInterest(inputBufferFull: Bool) -> Action {
        let wanted: Bool
        switch self.state {
        case .lingering:
            wanted = true
        case .exchange(let exchange) where exchange.pausesReading:
            wanted = false
        case .tunnel(let tunnel):
            wanted = tunnel.input == .open && !tunnel.paused && !inputBufferFull
        case .awaitingHead, .exchange, .closing:
            wanted = !self.inputClosed && !inputBufferFull
        case .closed:
            return .none
        }
        guard wanted != self.isReading else { return .none }
        self.isReading = wanted
        return wanted ? .resumeReading : .pauseReading
    }

    /// The socket took none of the queued output.
    mutating func writeWouldBlock() -> Action {
        switch self.state {
        case .awaitingHead, .exchange, .tunnel, .closing:
            guard !self.isWaitingForWritable else { return .none }
            self.isWaitingForWritable = true
            return .waitForWritable
        case .lingering, .closed:
            return .none
        }
    }

    /// The socket took some of the queued output.
    mutating func bytesWritten() -> Action {
        switch self.state {
        case .awaitingHead, .exchange, .tunnel, .closing:
            // Progress: the client took bytes, so it has the full time again.
            return self.isWaitingForWritable ? .armSendDeadline : .none
        case .lingering, .closed:
            return .none
        }
    }

    /// Everything queued was written.
    mutating func outputDrained() -> Action {
        switch self.state {
        case .awaitingHead, .exchange, .lingering:
            guard self.isWaitingForWritable else { return .none }
            self.isWaitingForWritable = false
            return .stopWaitingForWritable
        case .tunnel(var tunnel):
            // The other side's end goes out once everything before it did, once.
            let waiting = self.isWaitingForWritable
            self.isWaitingForWritable = false
            if tunnel.output == .endsWhenDrained {
                tunnel.output = .shut
                self.state = .tunnel(tunnel)
                return .shutdownOutput(stopWaitingForWritable: waiting)
            }
            return waiting ? .stopWaitingForWritable : .none
        case .closing:
            // RFC 9112 §9.6: a server closes in stages, so that unread request bytes do not
            // make the kernel reset the connection and destroy the answer still unread.
            let waiting = self.isWaitingForWritable
            self.isWaitingForWritable = false
            self.state = .lingering
            return .beginLingeringClose(stopWaitingForWritable: waiting)
        case .closed:
            return .none
        }
    }

    // MARK: Deadlines, shutdown, failure

    /// The armed input deadline passed.
    mutating func requestDeadlinePassed() -> Action {
        switch self.state {
        case .awaitingHead(partial: true):
            self.state = .closing
            return .respondTimeoutAndClose
        case .awaitingHead(partial: false) where self.isWaitingForWritable:
            // The last answer is still going out to a client that takes it slowly (the send
            // deadline bounds a client that takes nothing): the connection is not idle, so
            // its idle time starts again rather than cutting the answer short.
            return .arm(.idle)
        case .awaitingHead(partial: false):
            // Nothing was sent: close quietly, as after any idle keep-alive connection.
            self.state = .closed
            return .closeNow
        case .exchange(let exchange) where exchange.isStreaming:
            guard exchange.responseStarted else {
                self.state = .closing
                return .respondTimeoutAndClose
            }
            self.state = .closed
            return .closeNow
        case .tunnel:
            // No byte either way for the tunnel's idle time: both sides are closed.
            self.state = .closed
            return .closeNow
        case .exchange, .closing, .lingering, .closed:
            return .none
        }
    }

    /// Output waited for the client for the whole send deadline without it taking a byte.
    mutating func sendDeadlinePassed() -> Action {
        self.failed()
    }

    /// The linger deadline passed.
    mutating func lingerDeadlinePassed() -> Action {
        switch self.state {
        case .lingering:
            self.state = .closed
            return .closeNow
        case .awaitingHead, .exchange, .tunnel, .closing, .closed:
            return .none
        }
    }

    /// The proxy is shutting down: idle connections close now, busy ones after their exchange.
    mutating func drain() -> Action {
        self.draining = true
        switch self.state {
        case .awaitingHead(partial: false) where self.isWaitingForWritable:
            // The last answer is queued but a slow client is still taking it: it goes out
            // first, then the connection closes.
            self.state = .closing
            return .closeAfterFlush
        case .awaitingHead(partial: false):
            self.state = .closed
            return .closeNow
        case .awaitingHead(partial: true), .exchange, .tunnel, .closing, .lingering, .closed:
            // A tunnel stays until its sides end it, or the drain timeout.
            return .none
        }
    }

    /// A read or write failed: nothing more can be sent.
    mutating func failed() -> Action {
        switch self.state {
        case .awaitingHead, .exchange, .tunnel, .closing, .lingering:
            self.state = .closed
            return .closeNow
        case .closed:
            return .none
        }
    }

    /// Runs `body` on the active exchange's state; nothing happens without one.
    private mutating func withExchange(_ body: (inout Exchange) -> Action) -> Action {
        switch self.state {
        case .exchange(var exchange):
            let action = body(&exchange)
            self.state = .exchange(exchange)
            return action
        case .awaitingHead, .tunnel, .closing, .lingering, .closed:
            return .none
        }
    }
}
