import Dispatch
import TokenProxyHTTP
import TokenProxySupport

/// One client connection: reads and parses requests, hands each to the handler as an
/// ``HTTPExchange``, and writes responses, all in one ``SerialContext``: its transport's
/// events run holding the context's gate, and other threads reach the connection only
/// through the context.
///
/// The connection is the I/O side of ``ConnectionStateMachine``: it reads and writes its
/// transport, runs the parser and the encoder, resumes and suspends the readiness reports,
/// keeps the deadlines' instants, and closes, each when the state machine's actions say so.
/// It keeps no protocol state of its own. It is generic over the ``ConnectionTransport``
/// under it: a socket (``SocketTransport``) in the server, an in-memory stream in tests.
final class HTTPConnection<Transport: ConnectionTransport> {
    // The members below without `private` are shared with the extensions in
    // `HTTPConnection+Exchange.swift` and `HTTPConnection+Actions.swift`; nothing else uses them.

    /// Input bytes buffered unparsed above which the transport is not read.
    static var inputMark: Int { 65536 }
    /// How long a closing connection reads what the client still sends.
    static var lingerSeconds: Double { 2.0 }

    /// The context the connection is confined to.
    let context: SerialContext
    /// The byte stream to the client, its readiness and the deadlines' timer.
    let transport: Transport
    private let remoteAddress: String
    /// Deadlines, limits and buffer marks.
    let settings: ConnectionSettings
    private let handler: any HTTPExchangeHandler
    private let onClosed: (HTTPConnection) -> Void

    private var parser: HTTPRequestParser
    /// The connection's life; every decision is its.
    var lifecycle = ConnectionStateMachine()
    /// The framing of the current response.
    var encoder = ResponseEncoder()
    /// Where each response head is encoded before it is queued; kept from one response to the
    /// next, so that a head allocates no buffer of its own.
    var headBytes: [UInt8] = []
    /// The instants of the deadlines the state machine armed.
    var deadlines = ConnectionDeadlines()
    /// Bytes read and not yet consumed; consumed bytes are dropped past ``inputMark``.
    var input: ByteQueue
    /// Bytes queued for the client and not yet written; written bytes are dropped when the
    /// output drains (not before, so a slow client costs no copying).
    var output = ByteQueue(compactionThreshold: .max)
    /// The active exchange's object, while the state machine has one.
    var current: HTTPExchange?
    /// While true, writes are queued and flushed once at the end of the batch (a call-stack
    /// matter: ``batch(_:)`` nests).
    var batching = false
    /// Whether `process()` is on the call stack, so a finished exchange need not start it again.
    var processing = false

    /// A connection over `transport`, confined to `context`; `onClosed` runs once the
    /// transport was released.
    init(
        transport: Transport,
        remoteAddress: String,
        context: SerialContext,
        settings: ConnectionSettings,
        handler: any HTTPExchangeHandler,
        onClosed: @escaping (HTTPConnection) -> Void
    ) {
        self.transport = transport
        self.remoteAddress = remoteAddress
        self.context = context
        self.settings = settings
        self.handler = handler
        self.onClosed = onClosed
        self.parser = HTTPRequestParser(limits: settings.parserLimits)
        self.input = ByteQueue(compactionThreshold: Self.inputMark)
    }

    /// Starts reading; must run in ``context``. The transport holds the connection strongly
    /// until it reported its close, which is what keeps it alive.
    func start() {
        precondition(self.context.isCurrent)
        let context = self.context
        self.transport.start { [self] event in
            context.run {
                switch event {
                case .readable: self.readable()
                case .writable: self.writable()
                case .deadline: self.timerFired()
                case .closed: self.onClosed(self)
                }
            }
        }
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
            return try self.transport.read(into: &self.input)
        } catch {
            self.perform(self.lifecycle.failed())
            return -1
        }
    }

    /// Runs the parser over buffered input for as long as the state machine expects input.
    func process() {
        guard !self.lifecycle.isClosed else { return }
        self.processing = true
        defer { self.processing = false }
        parsing: while !self.lifecycle.isClosed, !self.input.isEmpty || self.parser.isAtEndOfMessage {
            switch self.lifecycle.expectedInput {
            case .head:
                guard self.parseHead() else { break parsing }
            case .body:
                guard let exchange = self.current, self.parseBody(exchange) else { break parsing }
            case .tunnel:
                self.deliverTunnelInput()
                break parsing
            case .nothing:
                break parsing
            }
        }
        self.updateReadInterest()
    }

    /// Hands a tunnel's exchange the bytes buffered, unparsed, then the client's end once it
    /// came, as far as the state machine says the exchange reads.
    func deliverTunnelInput() {
        guard self.lifecycle.expectedInput == .tunnel, let exchange = self.current else { return }
        if !self.input.isEmpty {
            let bytes = self.input.withUnsafeReadableBytes { Array($0) }
            self.input.removeAll(keepingCapacity: true)
            exchange.deliverBody(.bytes(bytes))
        }
        if self.lifecycle.takeTunnelInputEnd() {
            exchange.deliverBody(.end)
        }
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
        var bytes: [UInt8] = []
        switch self.parseStep(copyingBodyInto: &bytes) {
        case .needMoreData, .head:
            return false
        case .body:
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

    /// One step of the parser over the unread input; a body range is copied into `body`
    /// before the bytes are consumed.
    private func parseStep(copyingBodyInto body: inout [UInt8]) -> HTTPRequestParser.Outcome {
        let result = self.input.withUnsafeReadableBytes { raw in
            let buffer = raw.assumingMemoryBound(to: UInt8.self)
            let result = self.parser.next(buffer)
            if case .body(let range) = result.outcome {
                body = Array(buffer[range])
            }
            return result
        }
        self.input.consume(result.consumed)
        return result.outcome
    }

    private func parseStep() -> HTTPRequestParser.Outcome {
        var unused: [UInt8] = []
        return self.parseStep(copyingBodyInto: &unused)
    }

    private func startExchange(_ head: consuming HTTPRequestHead) {
        let hasBody = head.framing != .none && head.framing != .contentLength(0)
        let keepAlive = head.keepAlive
        let expectsContinue = head.expectsContinue
        self.encoder = ResponseEncoder()
        // The head moves into the exchange (its last use here): no copy of its strings.
        let exchange = HTTPExchange(
            head: head,
            remoteAddress: self.remoteAddress,
            context: self.context,
            connection: self
        )
        self.current = exchange
        self.perform(
            self.lifecycle.headReceived(keepAlive: keepAlive, hasBody: hasBody, expectsContinue: expectsContinue)
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
    func respondToBrokenRequest(_ error: ProxyError) {
        if let exchange = self.current {
            self.current = nil
            exchange.connectionClosed()
        }
        self.handler.requestRejected(error, remoteAddress: self.remoteAddress)
        self.output.append(contentsOf: ErrorResponse.wireBytes(for: error))
        self.flush()
    }

    // MARK: Writing

    /// Queues `bytes` and writes what the transport takes.
    func enqueue(_ bytes: [UInt8]) {
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

    /// Writes queued output until it drains or the transport would block, outside a batch.
    func flush() {
        guard !self.lifecycle.isClosed, !self.batching else { return }
        while !self.output.isEmpty {
            let result: IOResult<Int>
            do {
                result = try self.output.withUnsafeReadableBytes { buffer throws(SystemError) in
                    try self.transport.write(buffer)
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
            self.output.consume(written)
            self.perform(self.lifecycle.bytesWritten())
        }
        self.output.removeAll(keepingCapacity: self.output.capacity <= self.settings.outputHighMark)
        self.perform(self.lifecycle.outputDrained())
    }

    private func writable() {
        let wasWritable = self.isWritable
        self.flush()
        guard !self.lifecycle.isClosed else { return }
        if self.output.count <= self.settings.outputHighMark / 4, let exchange = self.current {
            if !wasWritable || exchange.onWritable != nil {
                exchange.onWritable?()
            }
        }
        self.updateReadInterest()
    }

    /// Reads the transport or stops, as the state machine decides for the input buffered.
    func updateReadInterest() {
        let inputBufferFull = self.input.count >= Self.inputMark
        self.perform(self.lifecycle.readInterest(inputBufferFull: inputBufferFull))
    }
}

@available(*, unavailable)
extension HTTPConnection: Sendable {}
