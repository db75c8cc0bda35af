import TokenProxySupport

/// The life of one upstream transfer as a pure state machine, beside its flow control
/// (``TransferFlowControl``): how far the response got (nothing yet, a line of it, a head
/// refused, the head handed to the sink, ended), how often libcurl was about to send the
/// request, whether collected output waits for the engine's hand-off, and the deadline the
/// engine enforces. Events from libcurl's callbacks and the engine in (with the time, so
/// the clock is the caller's), decisions out; ``CurlTransfer`` carries them out on the
/// engine thread.
///
/// The deadline is the first-byte deadline until the head arrived (armed when the request
/// was fully sent; a miss is 504), then the idle deadline, pushed back by every body byte
/// and lifted while the transfer is paused for its client (a miss aborts the client).
struct TransferStateMachine: Sendable {
    /// How libcurl ended the transfer, as far as the client's answer depends on it.
    enum Result: Sendable, Equatable {
        /// `CURLE_OK`.
        case ok
        /// `CURLE_ABORTED_BY_CALLBACK`: a callback stopped it.
        case stoppedByCallback
        /// `CURLE_OPERATION_TIMEDOUT`, the whole-life timeout; `requestSent` once the request
        /// went out.
        case timedOut(requestSent: Bool)
        /// `CURLE_SEND_ERROR`, `CURLE_RECV_ERROR` or `CURLE_GOT_NOTHING`; `reused` when the
        /// connection came from the cache.
        case connectionFailed(reused: Bool)
        /// `CURLE_SEND_FAIL_REWIND`: libcurl's own retry on a dead cached connection could not
        /// rewind the body (with the options set here, the only rewind it asks for).
        case rewindFailed
        /// Any other failure.
        case other
    }

    /// How the client learns that the transfer ended.
    enum Ending: Sendable, Equatable {
        /// The whole response arrived.
        case finish
        /// The response broke off after its head: the client must see a broken body, never a
        /// complete-looking one.
        case abort
        /// No head in time: 504 `upstream_timeout`.
        case timeout
        /// The head was refused (its framing): 502 with this error.
        case headRefused(ProxyError)
        /// libcurl's second send of a request that must not be sent twice was stopped.
        case secondSendStopped
        /// No response: 502 `upstream_unreachable` with libcurl's message.
        case unreachable
        /// No byte of a response on a connection the upstream may have just closed (RFC 9112
        /// §9.3.1): 502 unless the request is sent again.
        case lostReusedConnection
    }

    /// How far the response got.
    private enum Response: Sendable, Equatable {
        /// Nothing of it yet.
        case awaiting
        /// A line of it (an interim one included) arrived.
        case begun
        /// Its head was refused.
        case refused(ProxyError)
        /// Its head went to the sink; the body follows.
        case relaying
        /// The transfer ended.
        case ended
    }

    private var response = Response.awaiting
    /// How often libcurl was about to send the request (more than once: it sent it again).
    private var sends = 0
    private let resendable: Bool
    private var outboxQueued = false
    /// The first-byte and body idle limits, in milliseconds (as libcurl's options are).
    private let firstByteLimit: Int
    private let idleLimit: Int?
    /// When the engine ends the transfer, if it is still running then.
    private(set) var deadline: MonotonicTime?

    /// `resendable` whether libcurl may send the request twice; the first-byte and the body's
    /// idle limits in milliseconds (none for the body: nil).
    init(resendable: Bool, firstByteLimit: Int, idleLimit: Int?) {
        self.resendable = resendable
        self.firstByteLimit = firstByteLimit
        self.idleLimit = idleLimit
    }

    /// Whether libcurl sent the request a second time (a stopped second send does not count).
    var resent: Bool { self.sends > 1 && self.resendable }
}

extension TransferStateMachine {
    /// The handle is set up. Without a request body the request goes out at once, so the
    /// first-byte deadline starts now: the deadline armed, for the engine.
    mutating func prepared(sendsBody: Bool, now: MonotonicTime) -> MonotonicTime? {
        guard !sendsBody else { return nil }
        return self.armFirstByte(now: now)
    }

    /// The request body was fully sent: the first-byte deadline starts now, unless a head
    /// already arrived. The deadline armed, for the engine.
    mutating func requestSent(now: MonotonicTime) -> MonotonicTime? {
        self.armFirstByte(now: now)
    }

    /// libcurl is about to send the request on a connection: whether it may (a second send
    /// of a request that must not be sent twice is stopped).
    mutating func sending() -> Bool {
        self.sends += 1
        return self.sends == 1 || self.resendable
    }

    /// A header line arrived: whether it belongs to the head (false for trailers after the
    /// body, which are dropped, and for anything after the end).
    mutating func headerLineArrived() -> Bool {
        switch self.response {
        case .awaiting:
            self.response = .begun
            return true
        case .begun:
            // Left as it is: every line of a head comes here, and an assignment would
            // destroy the old value first.
            return true
        case .refused, .relaying, .ended:
            return false
        }
    }

    /// The head was refused for its framing: the transfer stops, and the client gets `error`.
    mutating func headRefused(_ error: ProxyError) {
        switch self.response {
        case .awaiting, .begun:
            self.response = .refused(error)
        case .refused, .relaying, .ended:
            break
        }
    }

    /// The head is complete and goes to the sink: the idle deadline replaces the first-byte
    /// one. The deadline armed, for the engine.
    mutating func headComplete(now: MonotonicTime) -> MonotonicTime? {
        switch self.response {
        case .awaiting, .begun:
            self.response = .relaying
            self.deadline = self.idleLimit.map { now.advanced(byMilliseconds: $0) }
            return self.deadline
        case .refused, .relaying, .ended:
            return nil
        }
    }

    /// Body bytes were taken: the body is idle again from now. The deadline armed.
    mutating func bodyTaken(now: MonotonicTime) -> MonotonicTime? {
        guard let idle = self.idleLimit else { return nil }
        switch self.response {
        case .relaying:
            self.deadline = now.advanced(byMilliseconds: idle)
            return self.deadline
        case .awaiting, .begun, .refused, .ended:
            return nil
        }
    }

    /// The write callback paused for the client: waiting for the client is not the
    /// upstream's silence.
    mutating func bodyPaused() {
        switch self.response {
        case .relaying:
            self.deadline = nil
        case .awaiting, .begun, .refused, .ended:
            break
        }
    }

    /// A paused transfer continues: a response body that waited for its client counts as
    /// idle again from now. The deadline armed.
    mutating func resumed(now: MonotonicTime) -> MonotonicTime? {
        self.bodyTaken(now: now)
    }

    /// Output was collected for the sink: whether to queue the transfer for the engine's
    /// hand-off (false when it is queued already).
    mutating func collected() -> Bool {
        guard !self.outboxQueued else { return false }
        self.outboxQueued = true
        return true
    }

    /// The engine handed the collected output over.
    mutating func outboxDelivered() {
        self.outboxQueued = false
    }

    /// The engine's deadline passed: how the client learns of it; nil once ended.
    mutating func deadlinePassed() -> Ending? {
        switch self.response {
        case .relaying:
            return self.end(.abort)
        case .awaiting, .begun, .refused:
            return self.end(.timeout)
        case .ended:
            return nil
        }
    }

    /// libcurl ended the transfer with `result`: how the client learns of it; nil once ended.
    mutating func completed(_ result: Result) -> Ending? {
        switch self.response {
        case .relaying:
            return self.end(result == .ok ? .finish : .abort)
        case .refused(let error):
            return self.end(.headRefused(error))
        case .awaiting, .begun:
            let nothingReceived = self.response == .awaiting
            switch result {
            case .stoppedByCallback where self.sends > 1:
                return self.end(.secondSendStopped)
            case .timedOut(requestSent: true):
                // The whole-life timeout ran out after the request went out: the upstream's
                // silence.
                return self.end(.timeout)
            case .connectionFailed(reused: true) where nothingReceived, .rewindFailed where nothingReceived:
                return self.end(.lostReusedConnection)
            case .ok, .stoppedByCallback, .timedOut, .connectionFailed, .rewindFailed, .other:
                return self.end(.unreachable)
            }
        case .ended:
            return nil
        }
    }

    private mutating func armFirstByte(now: MonotonicTime) -> MonotonicTime? {
        switch self.response {
        case .awaiting, .begun, .refused:
            self.deadline = now.advanced(byMilliseconds: self.firstByteLimit)
            return self.deadline
        case .relaying, .ended:
            return nil
        }
    }

    private mutating func end(_ ending: Ending) -> Ending {
        self.response = .ended
        return ending
    }
}
