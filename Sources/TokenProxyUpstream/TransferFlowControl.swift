/// The flow control of one upstream transfer, in both directions, as a pure state machine:
/// events from the client side (body bytes appended, body ended, the client connection
/// taking response bytes or not) and from libcurl (asking for request body bytes, handing
/// response body bytes) in, and what to do out (resume the transfer, pause or resume the
/// client's body, pause libcurl's read or write callback). No I/O and no locks:
/// ``CurlTransfer`` keeps it behind its mutex and carries out the actions.
///
/// Request body: libcurl's read callback pauses when nothing is buffered and is resumed by
/// the next bytes or by the end of the body; past `bodyHighMark` bytes buffered the client's
/// body is paused, and it is resumed once the buffer drained to `bodyLowMark`.
/// Response body: libcurl's write callback pauses while the client connection cannot take
/// more or `outPendingLimit` bytes are on their way to it, and is resumed when both clear.
struct TransferFlowControl: Sendable {
    /// Where libcurl's read callback stands.
    private enum Reader: Sendable {
        case reading
        /// It asked for bytes when none were buffered and was paused.
        case waitingForBytes
    }

    /// Where the client's request body stands.
    private enum Producer: Sendable {
        case producing
        /// Paused at the high mark, until the buffer drains to the low mark.
        case paused
        /// Ended: everything buffered is the rest of the body.
        case ended
    }

    /// What libcurl's read callback is to do.
    enum ReadAction: Equatable, Sendable {
        /// Copy up to this many buffered bytes.
        case copy
        /// Pause until bytes or the end arrive.
        case pause
        /// The body is complete: report its end.
        case end
    }

    /// Client body bytes buffered past this pause the client.
    static let bodyHighMark = 256 * 1024
    /// The client's body resumes once the buffer drained to this.
    static let bodyLowMark = 64 * 1024
    /// Response bytes on their way to the client past this pause libcurl's write callback.
    static let outPendingLimit = 512 * 1024

    private var reader = Reader.reading
    private var producer = Producer.producing
    private var buffered = 0
    /// Response bytes handed to the client side and not yet reported delivered.
    private var outPending = 0
    /// Whether the client connection said it cannot take more.
    private var consumerBlocked = false
    /// Whether libcurl's write callback was paused.
    private var writePaused = false

    // MARK: Request body

    /// The client appended `count` body bytes: whether to resume the transfer (libcurl was
    /// waiting for bytes) and whether to pause the client (the buffer passed the high mark).
    mutating func bodyAppended(_ count: Int) -> (resumeTransfer: Bool, pauseProducer: Bool) {
        self.buffered += count
        let resume = self.reader == .waitingForBytes
        self.reader = .reading
        var pause = false
        if self.buffered >= Self.bodyHighMark, self.producer == .producing {
            self.producer = .paused
            pause = true
        }
        return (resume, pause)
    }

    /// The client's body ended: whether to resume the transfer (libcurl was waiting).
    mutating func bodyEnded() -> Bool {
        self.producer = .ended
        defer { self.reader = .reading }
        return self.reader == .waitingForBytes
    }

    /// libcurl asks for request body bytes.
    mutating func readRequested() -> ReadAction {
        guard self.buffered == 0 else { return .copy }
        if self.producer == .ended { return .end }
        self.reader = .waitingForBytes
        return .pause
    }

    /// `count` buffered bytes went to libcurl: whether to resume the paused client.
    mutating func bodyConsumed(_ count: Int) -> Bool {
        self.buffered -= min(count, self.buffered)
        guard self.producer == .paused, self.buffered <= Self.bodyLowMark else { return false }
        self.producer = .producing
        return true
    }

    // MARK: Response body

    /// libcurl hands `count` response bytes: whether to take them (false: pause the write
    /// callback until ``responseDelivered(_:consumerWritable:)`` or
    /// ``consumerBecameWritable()`` resumes the transfer).
    mutating func responseArrived(_ count: Int) -> Bool {
        if self.consumerBlocked || self.outPending >= Self.outPendingLimit {
            self.writePaused = true
            return false
        }
        self.outPending += count
        return true
    }

    /// The client side took `count` response bytes and can (or cannot) take more: whether to
    /// resume the transfer. A delivery that finds the client writable ends an earlier block
    /// itself, since a flush that drained the socket brings no writable event.
    mutating func responseDelivered(_ count: Int, consumerWritable: Bool) -> Bool {
        self.outPending -= min(count, self.outPending)
        self.consumerBlocked = !consumerWritable
        return consumerWritable && self.takeWritePause()
    }

    /// The client connection drained: whether to resume the transfer.
    mutating func consumerBecameWritable() -> Bool {
        self.consumerBlocked = false
        return self.takeWritePause()
    }

    private mutating func takeWritePause() -> Bool {
        guard self.writePaused, !self.consumerBlocked, self.outPending < Self.outPendingLimit else { return false }
        self.writePaused = false
        return true
    }
}
