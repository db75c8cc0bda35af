import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// Moves bytes both ways through an upgraded connection, in the client connection's context:
/// the client's bytes (``HTTPExchange/readBody(_:)``) to the upstream's ``CurlTunnel``, the
/// upstream's to the client (``HTTPExchange/sendBody(_:)``), each with back-pressure: a side
/// that does not take its bytes stops the other from being read. Each side's end is passed
/// on as a half-close; the tunnel ends when both have ended, or when either fails.
///
/// The pump keeps the bytes and does the I/O; every decision is its
/// ``TunnelPumpStateMachine``'s, whose actions it carries out. The client connection keeps
/// the tunnel's idle deadline and its send deadline; the pump keeps no timer.
final class TunnelPump {
    /// The most received from the upstream in one call.
    static let receiveSize = 64 * 1024
    /// The most handed to `curl_easy_send` in one call.
    static let sendSize = 16 * 1024

    private let exchange: HTTPExchange
    private let tunnel: CurlTunnel
    private let onEnd: () -> Void
    /// Both directions' state; every decision is its.
    private var machine = TunnelPumpStateMachine()
    /// The client's bytes not yet handed to libcurl.
    private var pending = ByteQueue(compactionThreshold: 64 * 1024)
    /// Bytes handed to `curl_easy_send` that it could not take yet: sent again as they are,
    /// as TLS requires.
    private var inFlight: [UInt8] = []
    private var receiveBuffer = [UInt8](repeating: 0, count: TunnelPump.receiveSize)

    init(exchange: HTTPExchange, tunnel: CurlTunnel, onEnd: @escaping () -> Void) {
        self.exchange = exchange
        self.tunnel = tunnel
        self.onEnd = onEnd
    }

    /// Starts both directions; `leftover` came after the upstream's `101` head.
    func start(leftover: [UInt8]) {
        let context = self.exchange.context
        let bound = WeakBound(self, context: context)
        // The sources report on the connection's queue: the pump runs there at once, holding
        // the context as the client socket's events do (`HTTPConnection.start()`).
        self.tunnel.start(queue: context.queue) { event in
            context.run {
                guard let pump = bound.object else { return }
                switch event {
                case .readable: pump.perform(pump.machine.upstreamReadable())
                case .writable: pump.perform(pump.machine.upstreamWritable())
                }
            }
        }
        self.exchange.onWritable = { [weak self] in
            guard let self else { return }
            self.perform(self.machine.clientWritable())
        }
        if !leftover.isEmpty {
            self.exchange.sendBody(leftover)
        }
        self.exchange.readBody { [weak self] event in self?.clientSent(event) }
        // libcurl may hold decrypted bytes already: read before waiting for the socket.
        self.perform(self.machine.upstreamReadable())
    }

    /// Closes the upstream side; the exchange is left to its owner.
    func close() {
        self.perform(self.machine.close())
    }

    private func clientSent(_ event: RequestBodyEvent) {
        switch event {
        case .bytes(let bytes):
            self.pending.append(contentsOf: bytes)
            self.perform(self.machine.clientBytesQueued())
        case .end:
            self.perform(self.machine.clientEnded())
        }
    }

    // MARK: Carrying out the actions

    /// Carries out one action of the state machine.
    private func perform(_ action: TunnelPumpStateMachine.Action) {
        switch action {
        case .none:
            break
        case .send:
            self.sendToUpstream()
        case .receive:
            self.receiveFromUpstream()
        case .watchWritable(let pauseClient):
            self.tunnel.resumeWriting()
            if pauseClient {
                self.exchange.pauseBody()
            }
        case .pauseClient:
            self.exchange.pauseBody()
        case .resumeClient:
            self.exchange.resumeBody()
        case .stopWatchingWritable(let resumeClient):
            self.tunnel.suspendWriting()
            if resumeClient {
                self.exchange.resumeBody()
            }
        case .shutUpstreamSending(let stopWatchingWritable, let finish):
            if stopWatchingWritable {
                self.tunnel.suspendWriting()
            }
            self.tunnel.shutdownSending()
            if finish {
                self.finish()
            }
        case .watchReadable:
            self.tunnel.resumeReading()
        case .stopWatchingReadable:
            self.tunnel.suspendReading()
        case .endClientOutput(let stopWatchingReadable, let finish):
            if stopWatchingReadable {
                self.tunnel.suspendReading()
            }
            self.exchange.endTunnelOutput()
            if finish {
                self.finish()
            }
        case .abort:
            self.closeUpstream()
            self.exchange.abort()
            self.onEnd()
        case .close:
            self.closeUpstream()
        }
    }

    /// Hands the client's bytes to libcurl until it takes no more or none are left.
    private func sendToUpstream() {
        while true {
            if self.inFlight.isEmpty {
                guard !self.pending.isEmpty else { break }
                let count = min(self.pending.count, Self.sendSize)
                self.inFlight = self.pending.withUnsafeReadableBytes { Array($0.prefix(count)) }
                self.pending.consume(count)
            }
            let outcome = self.inFlight.withUnsafeBytes { self.tunnel.send($0) }
            switch outcome {
            case .done(let count):
                self.inFlight.removeFirst(min(count, self.inFlight.count))
            case .wouldBlock:
                self.perform(self.machine.sendWouldBlock(queued: self.pending.count))
                return
            case .ended, .failed:
                self.perform(self.machine.upstreamFailed())
                return
            }
        }
        self.perform(self.machine.sendDrained())
    }

    /// Hands the upstream's bytes to the client for as long as it takes them.
    private func receiveFromUpstream() {
        while self.exchange.isWritable {
            let tunnel = self.tunnel
            let outcome = self.receiveBuffer.withUnsafeMutableBytes { tunnel.receive(into: $0) }
            switch outcome {
            case .done(let count):
                self.exchange.sendBody(self.receiveBuffer[0..<count])
            case .wouldBlock:
                self.perform(self.machine.receiveWouldBlock())
                return
            case .ended:
                self.perform(self.machine.upstreamEnded())
                return
            case .failed:
                self.perform(self.machine.upstreamFailed())
                return
            }
        }
        // The client is slow (or gone): the upstream is not read until it took its bytes.
        self.perform(self.machine.clientFull())
    }

    /// Both sides ended: the tunnel is over.
    private func finish() {
        self.closeUpstream()
        self.exchange.finish()
        self.onEnd()
    }

    private func closeUpstream() {
        self.exchange.onWritable = nil
        self.tunnel.close()
    }
}

@available(*, unavailable)
extension TunnelPump: Sendable {}
