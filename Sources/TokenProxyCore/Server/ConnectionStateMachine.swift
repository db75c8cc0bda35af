/// The lifecycle of one client connection as a pure state machine: when to wait for a head,
/// which timer runs, whether the connection is kept alive after an exchange, and when it
/// closes. ``HTTPConnection`` feeds it events and carries out the returned actions.
///
/// Only one exchange is active at a time. Bytes of a pipelined next request stay buffered
/// until the current response is complete, so answers go out in request order.
struct ConnectionStateMachine: Sendable {
    /// Which deadline guards the connection.
    enum Timer: Sendable, Equatable {
        /// The total header deadline: the whole head must arrive before it (RFC 9112 leaves
        /// this to the server; it is total, not per read, so slowloris cannot extend it).
        case header
        /// The keep-alive idle deadline between requests.
        case idle
        /// Inactivity while reading a request body.
        case body
        /// No client deadline: the handler is producing the response.
        case none
    }

    /// What the connection must do next.
    enum Action: Sendable, Equatable {
        /// Nothing.
        case none
        /// Arm the timer for this deadline (or disarm it for `.none`).
        case arm(Timer)
        /// Parse the bytes already buffered: a pipelined request may be waiting, and arm the timer.
        case parseBuffered(Timer)
        /// Answer 408 `request_timeout`, then close.
        case respondTimeoutAndClose
        /// Close once everything queued is written.
        case closeAfterFlush
        /// Close now; tell an active exchange its client is gone.
        case closeNow
    }

    private enum State: Sendable, Equatable {
        /// Waiting for the next head; `partial` once any of its bytes arrived.
        case awaitingHead(partial: Bool)
        /// An exchange is active.
        case exchange(requestComplete: Bool, responseStarted: Bool, keepAlive: Bool)
        /// The response asked for the connection to end; only flushing remains.
        case closing
        case closed
    }

    private var state: State = .awaitingHead(partial: false)
    private var draining = false
    /// Whether the client closed its sending side (read returned 0).
    private(set) var inputClosed = false

    /// Whether the connection is between exchanges with no byte of a next request received.
    var isIdle: Bool { self.state == .awaitingHead(partial: false) }

    /// Whether the connection has been told to close.
    var isClosing: Bool { self.state == .closing || self.state == .closed }

    /// Whether the head's bytes are being awaited (so the parser should be fed).
    var wantsHead: Bool {
        if case .awaitingHead = self.state { return true }
        return false
    }

    /// The connection was accepted: the first head is due within the header deadline.
    mutating func accepted() -> Action {
        .arm(.header)
    }

    /// Bytes of a head arrived while awaiting one.
    mutating func headBytesReceived() -> Action {
        guard case .awaitingHead(partial: false) = self.state else { return .none }
        self.state = .awaitingHead(partial: true)
        // The idle deadline gives way to the header deadline at the first byte.
        return .arm(.header)
    }

    /// A complete head was parsed; `keepAlive` is the client's wish, `hasBody` its framing.
    mutating func headReceived(keepAlive: Bool, hasBody: Bool) -> Action {
        guard case .awaitingHead = self.state else { return .none }
        self.state = .exchange(
            requestComplete: !hasBody,
            responseStarted: false,
            keepAlive: keepAlive && !self.draining
        )
        return .arm(hasBody ? .body : .none)
    }

    /// The request body has been read completely.
    mutating func requestEnded() -> Action {
        guard case .exchange(_, let started, let keepAlive) = self.state else { return .none }
        self.state = .exchange(requestComplete: true, responseStarted: started, keepAlive: keepAlive)
        return .arm(.none)
    }

    /// The response head is about to be written. Returns whether the connection stays open
    /// after it, which the head must announce.
    mutating func responseStarted(closeRequested: Bool) -> Bool {
        guard case .exchange(let complete, _, let keepAlive) = self.state else { return false }
        let stays = keepAlive && !closeRequested && !self.draining && !self.inputClosed
        self.state = .exchange(requestComplete: complete, responseStarted: true, keepAlive: stays)
        return stays
    }

    /// The response is completely queued for writing.
    mutating func responseFinished() -> Action {
        guard case .exchange(let complete, _, let keepAlive) = self.state else { return .none }
        // A response that ends before its request body was read leaves unread bytes whose
        // framing we would have to trust; close instead.
        guard complete, keepAlive, !self.draining, !self.inputClosed else {
            self.state = .closing
            return .closeAfterFlush
        }
        self.state = .awaitingHead(partial: false)
        return .parseBuffered(.idle)
    }

    /// The armed deadline passed.
    mutating func timerFired(_ timer: Timer) -> Action {
        switch (self.state, timer) {
        case (.awaitingHead(partial: true), .header):
            self.state = .closing
            return .respondTimeoutAndClose
        case (.awaitingHead(partial: false), .header), (.awaitingHead(partial: false), .idle):
            // Nothing was sent: close quietly, as after any idle keep-alive connection.
            self.state = .closed
            return .closeNow
        case (.exchange(false, false, _), .body):
            self.state = .closing
            return .respondTimeoutAndClose
        case (.exchange(false, true, _), .body):
            self.state = .closed
            return .closeNow
        default:
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
        case .exchange(requestComplete: false, _, _):
            // The body was cut short: the exchange cannot complete.
            self.state = .closed
            return .closeNow
        case .exchange(requestComplete: true, let started, _):
            // A client may half-close after a complete request; answer it, then close.
            self.state = .exchange(requestComplete: true, responseStarted: started, keepAlive: false)
            return .none
        case .closing, .closed:
            return .none
        }
    }

    /// The proxy is shutting down: idle connections close now, busy ones after their exchange.
    mutating func drain() -> Action {
        self.draining = true
        switch self.state {
        case .awaitingHead(partial: false):
            self.state = .closed
            return .closeNow
        default:
            return .none
        }
    }

    /// The request was rejected by the parser or timed out: the error answer is the last
    /// thing sent.
    mutating func requestRejected() -> Action {
        guard self.state != .closed else { return .none }
        self.state = .closing
        return .closeAfterFlush
    }

    /// A read or write failed, or the exchange was aborted: nothing more can be sent.
    mutating func failed() -> Action {
        guard self.state != .closed else { return .none }
        self.state = .closed
        return .closeNow
    }
}
