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
/// The connection is the I/O side of ``ConnectionStateMachine``: it reads and writes the
/// socket, runs the parser and the encoder, resumes and suspends the Dispatch sources, keeps
/// the deadlines' instants, and closes, each when the state machine's actions say so. It
/// keeps no protocol state of its own. A descriptor is closed only after both
/// DispatchSources' cancel handlers have run.
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
    private var pendingCancelHandlers = 2

    private var parser: HTTPRequestParser
    private var lifecycle = ConnectionStateMachine()
    private var encoder = ResponseEncoder()
    private var deadlines = ConnectionDeadlines()
    private var input: [UInt8] = []
    private var inputStart = 0
    private var output: [UInt8] = []
    private var outputStart = 0
    /// The active exchange's object, while the state machine has one.
    private var current: HTTPExchange?
    /// While true, writes are queued and flushed once at the end of the batch (a call-stack
    /// matter: ``batch(_:)`` nests).
    private var batching = false
    /// Whether `process()` is on the call stack, so a finished exchange need not start it again.
    private var processing = false

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
        guard !self.lifecycle.isClosed else { return }
        let count = self.readIntoInput()
        if count == 0 {
            // EOF stays readable: the state machine stops reading for good, or its event
            // would fire until the connection closes.
            self.perform(self.lifecycle.inputEnded())
            self.updateReadInterest()
        } else if count > 0 {
            self.perform(self.lifecycle.bytesReceived())
        }
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

    /// Runs the parser over buffered input for as long as the state machine expects input.
    private func process() {
        guard !self.lifecycle.isClosed else { return }
        self.processing = true
        defer { self.processing = false }
        parsing: while !self.lifecycle.isClosed, self.inputStart < self.input.count || self.parser.isAtEndOfMessage {
            switch self.lifecycle.expectedInput {
            case .head:
                guard self.parseHead() else { break parsing }
            case .body:
                guard let exchange = self.current, self.parseBody(exchange) else { break parsing }
            case .nothing:
                break parsing
            }
        }
        self.compactInput()
        self.updateReadInterest()
    }

    /// Parses toward the next head; returns whether to keep going.
    private func parseHead() -> Bool {
        switch self.parseStep() {
        case .needMoreData:
            self.perform(self.lifecycle.headBytesReceived())
            return false
        case .head(let head):
            self.perform(self.lifecycle.headBytesReceived())
            self.startExchange(head)
            return true
        case .failed(let error):
            self.perform(self.lifecycle.requestMalformed(error))
            return false
        case .body, .end:
            // The parser yields body events only after a head; treat anything else as broken.
            self.perform(self.lifecycle.requestMalformed(ProxyError(.badRequest, "unexpected body")))
            return false
        }
    }

    /// Parses body bytes for the current exchange; returns whether to keep going.
    private func parseBody(_ exchange: HTTPExchange) -> Bool {
        let start = self.inputStart
        switch self.parseStep() {
        case .needMoreData, .head:
            return false
        case .body(let range):
            let bytes = Array(self.input[(start + range.lowerBound)..<(start + range.upperBound)])
            exchange.deliverBody(.bytes(bytes))
            return true
        case .end:
            self.perform(self.lifecycle.requestEnded())
            return true
        case .failed(let error):
            self.perform(self.lifecycle.requestMalformed(error))
            return false
        }
    }

    private func parseStep() -> HTTPRequestParser.Outcome {
        let start = self.inputStart
        let result = self.input.withUnsafeBufferPointer { buffer in
            self.parser.next(UnsafeBufferPointer(rebasing: buffer[start...]))
        }
        self.inputStart += result.consumed
        return result.outcome
    }

    private func startExchange(_ head: HTTPRequestHead) {
        let hasBody = head.framing != .none && head.framing != .contentLength(0)
        self.encoder = ResponseEncoder()
        let exchange = HTTPExchange(
            head: head,
            remoteAddress: self.remoteAddress,
            context: self.context,
            connection: self
        )
        self.current = exchange
        self.perform(
            self.lifecycle.headReceived(
                keepAlive: head.keepAlive,
                hasBody: hasBody,
                expectsContinue: head.expectsContinue
            )
        )
        if !hasBody {
            // Consume the parser's `.end` so it is ready for the next pipelined request.
            _ = self.parseStep()
        }
        self.handler.handle(exchange)
    }

    /// Answers a request whose framing is lost (or that timed out); the state machine closes
    /// after it. The error goes straight onto the wire, bypassing any exchange, since none
    /// can own the stream now.
    private func respondToBrokenRequest(_ error: ProxyError) {
        if let exchange = self.current {
            self.current = nil
            exchange.connectionClosed()
        }
        self.handler.requestRejected(error, remoteAddress: self.remoteAddress)
        self.output.append(contentsOf: ErrorResponse.wireBytes(for: error))
        self.flush()
    }

    // MARK: Exchange callbacks

    /// The exchange's handler asked for the request body.
    func exchangeReadBody(_ exchange: HTTPExchange) {
        guard exchange === self.current else { return }
        self.perform(self.lifecycle.bodyRequested())
    }

    /// The exchange's handler paused the request body.
    func exchangePauseBody(_ exchange: HTTPExchange) {
        guard exchange === self.current else { return }
        self.perform(self.lifecycle.bodyPaused())
    }

    /// The exchange's handler resumed the request body.
    func exchangeResumeBody(_ exchange: HTTPExchange) {
        guard exchange === self.current else { return }
        self.perform(self.lifecycle.bodyResumed())
    }

    /// Whether the output buffer is below its high mark.
    var isWritable: Bool {
        self.output.count - self.outputStart < self.settings.outputHighMark
    }

    /// Queues the response head, with the framing and keep-alive the state machine and the
    /// encoder agree on.
    func exchangeSendHead(_ exchange: HTTPExchange, _ head: HTTPResponseHead, closeConnection: Bool) {
        guard exchange === self.current else { return }
        let stays = self.lifecycle.responseStarted(closeRequested: closeConnection)
        var keepAlive = stays
        let bytes = self.encoder.encodeHead(
            head,
            requestVersion: exchange.head.version,
            requestIsHead: exchange.head.isHead,
            keepAlive: &keepAlive
        )
        if keepAlive != stays {
            self.lifecycle.responseEndsWithTheConnection()
        }
        self.enqueue(bytes)
    }

    /// Writes body bytes within the framing the head announced: bytes past an announced
    /// `Content-Length` are never written, and the exchange is aborted instead (the client's
    /// next read would otherwise take them for a response of its own).
    func exchangeSendBody(_ exchange: HTTPExchange, _ bytes: some Collection<UInt8>) {
        guard exchange === self.current else { return }
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
        guard exchange === self.current else { return true }
        guard self.encoder.isBodyComplete else {
            self.exchangeAbort(exchange)
            return false
        }
        self.encoder.encodeEnd(into: &self.output)
        self.current = nil
        let action = self.lifecycle.responseFinished()
        self.flush()
        self.perform(action)
        return true
    }

    /// Ends the exchange without completing its response: what was already queued (a head,
    /// part of a body) still goes out, then the connection ends.
    func exchangeAbort(_ exchange: HTTPExchange) {
        guard exchange === self.current else { return }
        self.current = nil
        self.perform(self.lifecycle.exchangeAborted())
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
        guard !self.lifecycle.isClosed, !self.batching else { return }
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
                self.perform(self.lifecycle.writeWouldBlock())
                self.updateReadInterest()
                return
            }
            self.outputStart += written
            self.perform(self.lifecycle.bytesWritten())
        }
        self.output.removeAll(keepingCapacity: self.output.capacity <= self.settings.outputHighMark)
        self.outputStart = 0
        self.perform(self.lifecycle.outputDrained())
    }

    private func writable() {
        let wasWritable = self.isWritable
        self.flush()
        guard !self.lifecycle.isClosed else { return }
        if self.output.count - self.outputStart <= self.settings.outputHighMark / 4, let exchange = self.current {
            if !wasWritable || exchange.onWritable != nil {
                exchange.onWritable?()
            }
        }
        self.updateReadInterest()
    }

    // MARK: Carrying out actions

    private func perform(_ action: ConnectionStateMachine.Action) {
        switch action {
        case .none:
            break
        case .arm(let timer):
            self.arm(timer)
        case .parse:
            self.process()
        case .armAndParse(let timer):
            self.arm(timer)
            self.process()
        case .parseBuffered(let timer):
            self.arm(timer)
            self.parseBuffered()
        case .discardInput:
            self.input.removeAll(keepingCapacity: true)
            self.inputStart = 0
        case .sendContinue:
            self.enqueue(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            self.process()
        case .deliverEnd:
            self.arm(.none)
            self.current?.deliverBody(.end)
        case .abortExchange:
            self.current?.abort()
        case .rejectRequest(let error):
            self.respondToBrokenRequest(error)
        case .respondTimeoutAndClose:
            self.respondToBrokenRequest(ProxyError(.requestTimeout, "the request did not arrive in time"))
        case .closeAfterFlush:
            // A flush under way (or the batch's) ends in `outputDrained`; with nothing
            // queued, the output has drained already.
            if self.outputStart == self.output.count {
                self.perform(self.lifecycle.outputDrained())
            }
        case .flushAndClose:
            self.batching = false
            self.flush()
        case .resumeReading:
            self.readSource.resume()
        case .pauseReading:
            self.readSource.suspend()
        case .waitForWritable:
            self.armSendDeadline()
            self.writeSource.resume()
        case .armSendDeadline:
            self.armSendDeadline()
        case .stopWaitingForWritable:
            _ = self.deadlines.setSend(nil)
            self.writeSource.suspend()
        case .beginLingeringClose(let stopWaitingForWritable):
            if stopWaitingForWritable {
                self.perform(.stopWaitingForWritable)
            }
            self.beginLingeringClose()
        case .closeNow:
            self.closeNow()
        }
    }

    /// Parses a pipelined request waiting in the buffer. Inside `process()` its loop picks
    /// it up; otherwise (the answer came from another thread's hop) parse now, since nothing
    /// else would. An answer written in place by an upstream engine leaves the next request
    /// to the queue, so that the engine's thread only writes and its other transfers never
    /// wait for a handler.
    private func parseBuffered() {
        if self.inputStart == self.input.count {
            self.input = []
            self.inputStart = 0
        }
        guard !self.processing, self.inputStart < self.input.count else { return }
        if self.context.isHeldInPlace {
            QueueBound(self, context: self.context).execute { $0.process() }
        } else {
            self.process()
        }
    }

    /// Arms the input deadline for `timer`.
    private func arm(_ timer: ConnectionStateMachine.Timer) {
        let seconds: Double
        switch timer {
        case .header: seconds = self.settings.headerTimeout
        case .idle, .body: seconds = self.settings.idleTimeout
        case .none:
            _ = self.deadlines.setInput(nil)
            return
        }
        self.reschedule(self.deadlines.setInput(.now() + seconds))
    }

    /// A client that takes no byte of its answer for the idle time is dropped (nginx's
    /// `send_timeout`): otherwise it would hold the connection, and in the proxy an upstream
    /// transfer, for as long as it likes; it also bounds any wait for a writable event.
    private func armSendDeadline() {
        self.reschedule(self.deadlines.setSend(.now() + self.settings.idleTimeout))
    }

    private func reschedule(_ fire: DispatchTime?) {
        if let fire {
            self.timer.schedule(deadline: fire)
        }
    }

    private func timerFired() {
        guard !self.lifecycle.isClosed else { return }
        let (expired, fire) = self.deadlines.fired(now: .now())
        self.reschedule(fire)
        switch expired {
        case nil: break
        case .input?: self.perform(self.lifecycle.requestDeadlinePassed())
        case .send?: self.perform(self.lifecycle.sendDeadlinePassed())
        case .linger?: self.perform(self.lifecycle.lingerDeadlinePassed())
        }
    }

    // MARK: Closing

    /// Sends FIN and reads what the client still sends for a short while before closing, so
    /// that unread request bytes do not make the kernel reset the connection and destroy
    /// the response the client has not read yet.
    private func beginLingeringClose() {
        shutdown(self.descriptor, Int32(SHUT_WR))
        self.reschedule(self.deadlines.setLinger(.now() + Self.lingerSeconds))
        self.updateReadInterest()
    }

    /// Ends the active exchange and cancels the sources; the descriptor closes once both
    /// cancel handlers ran. A suspended source is resumed first, as Dispatch requires.
    private func closeNow() {
        if let exchange = self.current {
            self.current = nil
            exchange.connectionClosed()
        }
        self.timer.cancel()
        if !self.lifecycle.isReading {
            self.readSource.resume()
        }
        if !self.lifecycle.isWaitingForWritable {
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
        let inputBufferFull = self.input.count - self.inputStart >= Self.inputMark
        self.perform(self.lifecycle.readInterest(inputBufferFull: inputBufferFull))
    }
}

@available(*, unavailable)
extension HTTPConnection: Sendable {}
