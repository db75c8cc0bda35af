import Dispatch
import Testing

@testable import TokenProxyServer
@testable import TokenProxySupport

/// An ``HTTPConnection`` over a ``MemoryTransport``, driven by the test on its own thread:
/// send bytes (whole or split anywhere), end or reset the input, take what the connection
/// wrote, stop and resume taking it, and move the connection's clock. Each call runs holding
/// the connection's context and reports every event that became due before it returns, so a
/// test sees the effect of each step at once, with no sleep and no socket.
///
/// Work that a handler hands to the context's queue from another thread is waited for with
/// ``settle(until:)``, which polls with a bound.
final class EmbeddedConnection {
    /// The context the connection is confined to.
    let context: SerialContext
    /// The connection's transport; read it inside ``run(_:)``.
    let transport: MemoryTransport
    private let connection: HTTPConnection<MemoryTransport>
    private var unparsed: [UInt8] = []

    /// A connection serving `handler`, started (reading, its header deadline armed).
    init(
        handler: any HTTPExchangeHandler,
        settings: ConnectionSettings = ConnectionSettings(),
        remoteAddress: String = "127.0.0.1"
    ) {
        self.context = SerialContext(queue: DispatchQueue(label: "tokenproxy.test.embedded"))
        self.transport = MemoryTransport()
        self.connection = HTTPConnection(
            transport: self.transport,
            remoteAddress: remoteAddress,
            context: self.context,
            settings: settings,
            handler: handler,
            onClosed: { _ in }
        )
        self.run { self.connection.start() }
    }

    /// Runs `body` holding the context, then reports every event that became due.
    @discardableResult
    func run<Result>(_ body: () -> Result) -> Result {
        var result: Result?
        self.context.run {
            result = body()
            self.reportDueEvents()
        }
        guard let result else { preconditionFailure("a serial context runs the body it is given") }
        return result
    }

    private func reportDueEvents() {
        for _ in 0..<100_000 {
            guard self.transport.reportNextEvent() else { return }
        }
        Issue.record("the connection keeps reporting events: a busy loop")
    }

    // MARK: The client's side

    /// The client sends `text` (UTF-8) in one piece.
    func send(_ text: String) {
        self.send(Array(text.utf8))
    }

    /// The client sends `bytes` in one piece.
    func send(_ bytes: some Sequence<UInt8>) {
        self.run { self.transport.inbound.append(contentsOf: bytes) }
    }

    /// The client ends its output (a half-close: it may still read).
    func endInput() {
        self.run { self.transport.inputEnded = true }
    }

    /// The client resets the connection.
    func reset() {
        self.run { self.transport.isReset = true }
    }

    /// The client stops taking bytes once it took `count` more.
    func stopReading(after count: Int = 0) {
        self.run { self.transport.receiveWindow = count }
    }

    /// The client takes bytes again, as many as are written.
    func resumeReading() {
        self.run { self.transport.receiveWindow = nil }
    }

    /// The server drains (as on SIGTERM): the connection ends once its exchanges have.
    func drain() {
        self.run { self.connection.drain() }
    }

    /// Moves the connection's clock on by `seconds`; deadlines reached fire.
    func advance(by seconds: Double) {
        self.run { self.transport.clock = self.transport.clock.advanced(bySeconds: seconds) }
    }

    /// Everything written since the last take, as bytes.
    func takeWritten() -> [UInt8] {
        let taken = self.run {
            defer { self.transport.written = [] }
            return self.unparsed + self.transport.written
        }
        self.unparsed = []
        return taken
    }

    /// Parses the next complete response the connection wrote; nil while it is incomplete.
    /// `headRequest` means the response has no body whatever its headers say.
    func readResponse(headRequest: Bool = false) throws -> TestClient.Response? {
        self.unparsed += self.run {
            defer { self.transport.written = [] }
            return self.transport.written
        }
        guard
            let (response, consumed) = try WireResponse.parse(
                self.unparsed,
                headRequest: headRequest,
                untilClose: self.run { self.transport.isClosed || self.transport.outputEnded }
            )
        else { return nil }
        self.unparsed.removeFirst(consumed)
        return response
    }

    /// Whether the connection ended its output (its answer is complete; a lingering close).
    var outputEnded: Bool { self.run { self.transport.outputEnded } }

    /// Whether the connection closed and released its transport.
    var isClosed: Bool { self.run { self.transport.closeReported } }

    /// Whether the connection reads its input now.
    var isReading: Bool { self.run { self.transport.isReading } }

    /// Waits, polling with a bound, for `condition` (checked holding the context) after work
    /// handed to the context's queue ran; for handlers that answer from another thread.
    func settle(until condition: @escaping () -> Bool) -> Bool {
        eventually {
            self.context.queue.sync {}
            return self.run { condition() }
        }
    }
}

@available(*, unavailable)
extension EmbeddedConnection: Sendable {}
