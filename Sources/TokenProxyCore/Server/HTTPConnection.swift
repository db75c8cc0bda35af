import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Settings a connection needs from the configuration.
public struct ConnectionSettings: Sendable {
    /// Parser size limits.
    public var parserLimits: HTTPParserLimits
    /// The total deadline for a request head (→ 408).
    public var headerTimeout: Double
    /// How long an idle keep-alive connection is kept; also the body inactivity deadline.
    public var idleTimeout: Double
    /// Bytes of response waiting for the client above which the connection reports itself
    /// not writable; it is writable again below a quarter of it. Tests make it small to reach
    /// the buffer's edges with small answers.
    var outputHighMark = 256 * 1024

    /// Creates settings; the defaults are those of `docs/configuration.md`, "Limits".
    public init(
        parserLimits: HTTPParserLimits = HTTPParserLimits(),
        headerTimeout: Double = 10,
        idleTimeout: Double = 60
    ) {
        self.parserLimits = parserLimits
        self.headerTimeout = headerTimeout
        self.idleTimeout = idleTimeout
    }
}

/// One client connection: reads and parses requests, hands each to the handler as an
/// ``HTTPExchange``, and writes responses, all in one ``SerialContext``: its Dispatch
/// sources run on the context's queue holding its gate, and other threads reach the
/// connection only through the context.
///
/// Read back-pressure: the socket is read only while the input buffer is below its mark and
/// the body consumer (if any) is not paused; nothing more is parsed until the current
/// exchange ends. Write back-pressure: the exchange is not writable while the output buffer
/// is over its mark. A descriptor is closed only after both DispatchSources' cancel handlers
/// have run.
final class HTTPConnection {
    private static let inputMark = 65536
    private static let lingerSeconds = 2.0

    let context: SerialContext
    private let descriptor: Int32
    private let remoteAddress: String
    private let settings: ConnectionSettings
    private let handler: any HTTPExchangeHandler
    private let onClosed: (HTTPConnection) -> Void

    private let readSource: DispatchSourceRead
    private let writeSource: DispatchSourceWrite
    private let timer: DispatchSourceTimer
    private var readSuspended = true
    private var writeSuspended = true
    private var pendingCancelHandlers = 2

    private var parser: HTTPRequestParser
    private var lifecycle = ConnectionStateMachine()
    private var encoder = ResponseEncoder()
    private var armedTimer = ConnectionStateMachine.Timer.none
    private var deadline: DispatchTime?
    /// While answer bytes wait for the client: when it must have taken some more by.
    private var sendDeadline: DispatchTime?
    private var scheduledFire: DispatchTime?
    private var input: [UInt8] = []
    private var inputStart = 0
    private var output: [UInt8] = []
    private var outputStart = 0
    private var current: HTTPExchange?
    private var continueSent = false
    private var closeWhenFlushed = false
    /// While true, writes are queued and flushed once at the end of the batch.
    private var batching = false
    /// Whether `process()` is running, so a finished exchange need not start it again.
    private var processing = false
    private var lingering = false
    private var closed = false

    init(
        descriptor: Int32,
        remoteAddress: String,
        context: SerialContext,
        settings: ConnectionSettings,
        handler: any HTTPExchangeHandler,
        onClosed: @escaping (HTTPConnection) -> Void
    ) {
        self.descriptor = descriptor
        self.remoteAddress = remoteAddress
        self.context = context
        self.settings = settings
        self.handler = handler
        self.onClosed = onClosed
        self.parser = HTTPRequestParser(limits: settings.parserLimits)
        self.readSource = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: context.queue)
        self.writeSource = DispatchSource.makeWriteSource(fileDescriptor: descriptor, queue: context.queue)
        self.timer = DispatchSource.makeTimerSource(queue: context.queue)
    }

    /// Starts reading; must run in ``context``. The sources hold the connection strongly
    /// until they are cancelled, which is what keeps it alive.
    func start() {
        precondition(self.context.isCurrent)
        let context = self.context
        self.readSource.setEventHandler { [self] in context.run { self.readable() } }
        self.writeSource.setEventHandler { [self] in context.run { self.writable() } }
        self.timer.setEventHandler { [self] in context.run { self.timerFired() } }
        let cancelled = { [self] in
            context.run {
                self.pendingCancelHandlers -= 1
                if self.pendingCancelHandlers == 0 {
                    Glibc.close(self.descriptor)
                    self.onClosed(self)
                }
            }
        }
        self.readSource.setCancelHandler(handler: cancelled)
        self.writeSource.setCancelHandler(handler: cancelled)
        self.timer.schedule(deadline: .distantFuture)
        self.timer.resume()
        self.perform(self.lifecycle.accepted())
        self.updateReadInterest()
    }

    /// Begins a graceful shutdown: idle connections close, busy ones after their exchange.
    func drain() {
        precondition(self.context.isCurrent)
        self.perform(self.lifecycle.drain())
    }

    // MARK: Reading

    private func readable() {
        guard !self.closed else { return }
        let count = self.readIntoInput()
        if self.lingering {
            // Discard what a closing client still sends; close at its EOF.
            self.input.removeAll(keepingCapacity: true)
            self.inputStart = 0
            if count == 0 { self.closeNow() }
            return
        }
        if count == 0 {
            // EOF stays readable: reading stops for good (the lifecycle records the closed
            // input), or its event would fire until the connection closes.
            self.perform(self.lifecycle.inputEnded())
            self.updateReadInterest()
            return
        }
        if count < 0 { return }
        if self.armedTimer == .body {
            self.arm(.body)
        }
        self.process()
    }

    /// Reads once into the input buffer: the byte count, 0 at EOF, -1 when nothing was read.
    private func readIntoInput() -> Int {
        do {
            return try Socket.readThroughThreadBuffer(self.descriptor) { outcome in
                guard case .processed(let bytes) = outcome else { return -1 }
                self.input.append(contentsOf: bytes)
                return bytes.count
            }
        } catch {
            self.perform(self.lifecycle.failed())
            return -1
        }
    }

    /// Runs the parser over buffered input for as long as there is someone to take the result.
    private func process() {
        guard !self.closed else { return }
        self.processing = true
        defer { self.processing = false }
        while !self.closed, self.inputStart < self.input.count || self.parser.isAtEndOfMessage {
            if self.lifecycle.wantsHead {
                guard self.parseHead() else { break }
            } else if let exchange = self.current, exchange.bodyHandler != nil, !exchange.bodyPaused,
                !self.requestBodyDone
            {
                guard self.parseBody(exchange) else { break }
            } else {
                break
            }
        }
        self.compactInput()
        self.updateReadInterest()
    }

    private var requestBodyDone = true

    /// Parses toward the next head; returns whether to keep going.
    private func parseHead() -> Bool {
        let (outcome, consumed) = self.parseStep()
        switch outcome {
        case .needMoreData:
            self.perform(self.lifecycle.headBytesReceived())
            return false
        case .head(let head):
            self.perform(self.lifecycle.headBytesReceived())
            self.startExchange(head)
            return true
        case .failed(let error):
            self.respondToBrokenRequest(error)
            return false
        case .body, .end:
            // The parser yields body events only after a head; treat anything else as broken.
            _ = consumed
            self.respondToBrokenRequest(ProxyError(.badRequest, "unexpected body"))
            return false
        }
    }

    /// Parses body bytes for the current exchange; returns whether to keep going.
    private func parseBody(_ exchange: HTTPExchange) -> Bool {
        let start = self.inputStart
        let (outcome, _) = self.parseStep()
        switch outcome {
        case .needMoreData:
            return false
        case .body(let range):
            let bytes = Array(self.input[(start + range.lowerBound)..<(start + range.upperBound)])
            exchange.deliverBody(.bytes(bytes))
            return true
        case .end:
            self.finishRequestBody(exchange)
            return true
        case .failed(let error):
            if exchange.responseStarted {
                exchange.abort()
            } else {
                self.respondToBrokenRequest(error)
            }
            return false
        case .head:
            return false
        }
    }

    private func parseStep() -> (HTTPRequestParser.Outcome, Int) {
        let start = self.inputStart
        let result = self.input.withUnsafeBufferPointer { buffer in
            self.parser.next(UnsafeBufferPointer(rebasing: buffer[start...]))
        }
        self.inputStart += result.consumed
        return result
    }

    private func finishRequestBody(_ exchange: HTTPExchange) {
        self.requestBodyDone = true
        self.bodyEndDelivered = true
        self.perform(self.lifecycle.requestEnded())
        exchange.deliverBody(.end)
    }

    private func startExchange(_ head: HTTPRequestHead) {
        let hasBody = head.framing != .none && head.framing != .contentLength(0)
        self.requestBodyDone = false
        self.continueSent = false
        self.encoder = ResponseEncoder()
        let exchange = HTTPExchange(
            head: head,
            remoteAddress: self.remoteAddress,
            context: self.context,
            connection: self
        )
        self.current = exchange
        self.perform(self.lifecycle.headReceived(keepAlive: head.keepAlive, hasBody: hasBody))
        if !hasBody {
            // Consume the parser's `.end` so it is ready for the next pipelined request.
            _ = self.parseStep()
            self.requestBodyDone = true
            self.perform(self.lifecycle.requestEnded())
        }
        self.handler.handle(exchange)
    }

    /// Answers a request whose framing is lost (or that timed out) and closes: the error
    /// goes straight onto the wire, bypassing any exchange, since none can own the stream now.
    private func respondToBrokenRequest(_ error: ProxyError) {
        if let exchange = self.current {
            self.current = nil
            exchange.connectionClosed()
        }
        self.handler.requestRejected(error, remoteAddress: self.remoteAddress)
        self.output.append(contentsOf: ErrorResponse.wireBytes(for: error))
        self.perform(self.lifecycle.requestRejected())
        self.flush()
    }

    // MARK: Exchange callbacks

    func exchangeWantsBody(_ exchange: HTTPExchange) {
        guard exchange === self.current, !self.closed else { return }
        if self.requestBodyDone {
            if exchange.bodyHandler != nil, !exchange.bodyPaused, !self.bodyEndDelivered {
                self.bodyEndDelivered = true
                exchange.deliverBody(.end)
            }
            return
        }
        if exchange.head.expectsContinue, !self.continueSent, !exchange.responseStarted {
            // RFC 9110 §10.1.1: the client waits for this before sending the body.
            self.continueSent = true
            self.enqueue(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        self.process()
    }

    private var bodyEndDelivered = false

    var isWritable: Bool {
        self.output.count - self.outputStart < self.settings.outputHighMark
    }

    func exchangeSendHead(_ exchange: HTTPExchange, _ head: HTTPResponseHead, closeConnection: Bool) {
        guard exchange === self.current, !self.closed else { return }
        // A body nobody reads cannot be skipped safely: announce the close up front.
        let unreadBody = !self.requestBodyDone && exchange.bodyHandler == nil
        let stays = self.lifecycle.responseStarted(closeRequested: closeConnection || unreadBody)
        var keepAlive = stays
        let bytes = self.encoder.encodeHead(
            head,
            requestVersion: exchange.head.version,
            requestIsHead: exchange.head.isHead,
            keepAlive: &keepAlive
        )
        if keepAlive != stays {
            _ = self.lifecycle.responseStarted(closeRequested: true)
        }
        self.enqueue(bytes)
    }

    /// Writes body bytes within the framing the head announced: bytes past an announced
    /// `Content-Length` are never written, and the exchange is aborted instead (the client's
    /// next read would otherwise take them for a response of its own).
    func exchangeSendBody(_ exchange: HTTPExchange, _ bytes: some Collection<UInt8>) {
        guard exchange === self.current, !self.closed else { return }
        if self.encoder.encodeBody(bytes, into: &self.output) == .exceedsLength {
            exchange.abort()
            return
        }
        self.flush()
    }

    /// Ends the response; returns false when the body fell short of the announced
    /// `Content-Length`, in which case the connection is aborted rather than finished, so
    /// the client sees a broken body, never a complete-looking one.
    @discardableResult
    func exchangeFinish(_ exchange: HTTPExchange) -> Bool {
        guard exchange === self.current, !self.closed else { return true }
        guard self.encoder.isBodyComplete else {
            self.exchangeAbort(exchange)
            return false
        }
        self.encoder.encodeEnd(into: &self.output)
        self.current = nil
        self.bodyEndDelivered = false
        if !self.requestBodyDone {
            // The rest of the body is never read; the lifecycle closes the connection.
            self.requestBodyDone = true
        }
        let action = self.lifecycle.responseFinished()
        self.flush()
        self.perform(action)
        return true
    }

    func exchangeAbort(_ exchange: HTTPExchange) {
        guard exchange === self.current else { return }
        self.current = nil
        _ = self.lifecycle.failed()
        // What was already queued (a head, part of a body) still goes out; then the
        // connection ends, so the client sees the body break off rather than complete.
        self.batching = false
        self.closeWhenFlushed = true
        self.flush()
    }

    // MARK: Writing

    private func enqueue(_ bytes: [UInt8]) {
        self.output.append(contentsOf: bytes)
        self.flush()
    }

    /// Runs `body` with writes coalesced into one flush at its end.
    func batch(_ body: () -> Void) {
        let outer = self.batching
        self.batching = true
        body()
        self.batching = outer
        if !outer {
            self.flush()
        }
    }

    private func flush() {
        guard !self.closed, !self.batching else { return }
        while self.outputStart < self.output.count {
            let start = self.outputStart
            let result: IOResult<Int>
            do {
                result = try self.output.withUnsafeBytes { buffer throws(SystemError) in
                    let base = buffer.baseAddress.map { $0 + start }
                    return try syscall("write") {
                        Glibc.send(self.descriptor, base, buffer.count - start, Int32(MSG_NOSIGNAL))
                    }
                }
            } catch {
                self.perform(self.lifecycle.failed())
                return
            }
            guard case .processed(let written) = result else {
                if self.sendDeadline == nil {
                    self.armSendDeadline()
                }
                if self.writeSuspended {
                    self.writeSuspended = false
                    self.writeSource.resume()
                }
                self.updateReadInterest()
                return
            }
            self.outputStart += written
            if self.sendDeadline != nil {
                // Progress: the client took bytes, so it has the full time again.
                self.armSendDeadline()
            }
        }
        self.sendDeadline = nil
        self.output.removeAll(keepingCapacity: self.output.capacity <= self.settings.outputHighMark)
        self.outputStart = 0
        if !self.writeSuspended {
            self.writeSuspended = true
            self.writeSource.suspend()
        }
        if self.closeWhenFlushed {
            self.beginLingeringClose()
        }
    }

    private func writable() {
        let wasWritable = self.isWritable
        self.flush()
        guard !self.closed else { return }
        if self.output.count - self.outputStart <= self.settings.outputHighMark / 4, let exchange = self.current {
            if !wasWritable || exchange.onWritable != nil {
                exchange.onWritable?()
            }
        }
        self.updateReadInterest()
    }

    // MARK: Timers and closing

    /// Arms the deadline for `timer`. The DispatchSource is rescheduled only when the new
    /// deadline is earlier than the one it will fire at; a later deadline is checked when it
    /// fires. Re-arming on every request would cost a timer update each time.
    private func arm(_ timer: ConnectionStateMachine.Timer) {
        self.armedTimer = timer
        let seconds: Double
        switch timer {
        case .header: seconds = self.settings.headerTimeout
        case .idle, .body: seconds = self.settings.idleTimeout
        case .none:
            self.deadline = nil
            return
        }
        let deadline = DispatchTime.now() + seconds
        self.deadline = deadline
        self.schedule(deadline)
    }

    /// A client that takes no byte of its answer for the idle time is dropped (nginx's
    /// `send_timeout`): otherwise it would hold the connection, and in the proxy an upstream
    /// transfer, for as long as it likes; it also bounds any wait for a writable event.
    private func armSendDeadline() {
        let deadline = DispatchTime.now() + self.settings.idleTimeout
        self.sendDeadline = deadline
        self.schedule(deadline)
    }

    /// Makes the timer fire by `deadline`; a timer already due earlier is left alone (it
    /// re-schedules itself for what is still pending when it fires).
    private func schedule(_ deadline: DispatchTime) {
        if self.scheduledFire.map({ deadline < $0 }) ?? true {
            self.scheduledFire = deadline
            self.timer.schedule(deadline: deadline)
        }
    }

    private func timerFired() {
        guard !self.closed else { return }
        if self.lingering {
            self.closeNow()
            return
        }
        self.scheduledFire = nil
        let now = DispatchTime.now()
        if let sendDeadline = self.sendDeadline {
            guard now < sendDeadline else {
                // The client took nothing for the idle time: give up on it.
                self.perform(self.lifecycle.failed())
                return
            }
            self.schedule(sendDeadline)
        }
        guard let deadline = self.deadline else { return }
        if now < deadline {
            self.schedule(deadline)
            return
        }
        self.deadline = nil
        self.perform(self.lifecycle.timerFired(self.armedTimer))
    }

    private func perform(_ action: ConnectionStateMachine.Action) {
        switch action {
        case .none:
            break
        case .arm(let timer):
            self.arm(timer)
        case .parseBuffered(let timer):
            self.arm(timer)
            if self.inputStart == self.input.count {
                self.input = []
                self.inputStart = 0
            }
            // Inside `process()` its loop picks up the next request; otherwise (the answer came
            // from another thread's hop) parse now, since nothing else would. An answer written
            // in place by an upstream engine leaves the next request to the queue, so that the
            // engine's thread only writes and its other transfers never wait for a handler.
            if !self.processing, self.inputStart < self.input.count {
                if self.context.isHeldInPlace {
                    QueueBound(self, context: self.context).execute { $0.process() }
                } else {
                    self.process()
                }
            }
        case .respondTimeoutAndClose:
            self.respondToBrokenRequest(ProxyError(.requestTimeout, "the request did not arrive in time"))
        case .closeAfterFlush:
            self.closeWhenFlushed = true
            if self.output.count == self.outputStart {
                self.beginLingeringClose()
            }
        case .closeNow:
            self.closeNow()
        }
    }

    /// Sends FIN and reads what the client still sends for a short while before closing, so
    /// that unread request bytes do not make the kernel reset the connection and destroy
    /// the response the client has not read yet.
    private func beginLingeringClose() {
        guard !self.lingering, !self.closed else { return }
        self.lingering = true
        shutdown(self.descriptor, Int32(SHUT_WR))
        self.scheduledFire = .now() + Self.lingerSeconds
        self.timer.schedule(deadline: .now() + Self.lingerSeconds)
        self.updateReadInterest()
    }

    private func closeNow() {
        guard !self.closed else { return }
        self.closed = true
        if let exchange = self.current {
            self.current = nil
            exchange.connectionClosed()
        }
        self.timer.cancel()
        if self.readSuspended {
            self.readSuspended = false
            self.readSource.resume()
        }
        if self.writeSuspended {
            self.writeSuspended = false
            self.writeSource.resume()
        }
        self.readSource.cancel()
        self.writeSource.cancel()
        self.input = []
        self.output = []
    }

    private func compactInput() {
        if self.inputStart == self.input.count {
            self.input.removeAll(keepingCapacity: true)
            self.inputStart = 0
        } else if self.inputStart > Self.inputMark {
            self.input.removeFirst(self.inputStart)
            self.inputStart = 0
        }
    }

    private func updateReadInterest() {
        guard !self.closed else { return }
        // Reading goes on while the client is slow to take the answer: a client that resets
        // the connection is then seen by the read source, which does not depend on a write
        // source being armed in time (with Dispatch on Linux, a reset that arrives before a
        // write source's first registration can be lost, leaving the exchange waiting for
        // ever; docs/architecture.md). Input is still bounded by its mark, and nothing is
        // parsed until the current exchange ends.
        let inputRoom = self.input.count - self.inputStart < Self.inputMark
        var wanted = self.lingering || (!self.lifecycle.inputClosed && inputRoom)
        if let exchange = self.current, exchange.bodyPaused, !self.requestBodyDone {
            wanted = self.lingering
        }
        if wanted, self.readSuspended {
            self.readSuspended = false
            self.readSource.resume()
        } else if !wanted, !self.readSuspended {
            self.readSuspended = true
            self.readSource.suspend()
        }
    }
}

@available(*, unavailable)
extension HTTPConnection: Sendable {}
