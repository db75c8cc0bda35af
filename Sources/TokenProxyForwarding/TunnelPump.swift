import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// Moves bytes both ways through an upgraded connection, in the client connection's context:
/// the client's bytes (``HTTPExchange/readBody(_:)``) to the upstream's ``CurlTunnel``, the
/// upstream's to the client (``HTTPExchange/sendBody(_:)``), each with back-pressure: a side
/// that does not take its bytes stops the other from being read. Each side's end is passed
/// on as a half-close; the tunnel ends when both have ended, or when either fails.
///
/// The client connection keeps the tunnel's idle deadline and its send deadline; the pump
/// keeps no timer.
final class TunnelPump {
    /// Bytes from the client waiting for the upstream above which the client is not read.
    static let pendingMark = 256 * 1024
    /// The most received from the upstream in one call.
    static let receiveSize = 64 * 1024

    private let exchange: HTTPExchange
    private let tunnel: CurlTunnel
    private let onEnd: () -> Void
    /// The client's bytes not yet handed to libcurl.
    private var pending = ByteQueue(compactionThreshold: 64 * 1024)
    /// Bytes handed to `curl_easy_send` that it could not take yet: sent again as they are,
    /// as TLS requires.
    private var inFlight: [UInt8] = []
    private var receiveBuffer = [UInt8](repeating: 0, count: TunnelPump.receiveSize)
    private var clientPaused = false
    private var clientEnded = false
    private var upstreamEnded = false
    private var waitingForUpstreamWritable = false
    private var closed = false

    init(exchange: HTTPExchange, tunnel: CurlTunnel, onEnd: @escaping () -> Void) {
        self.exchange = exchange
        self.tunnel = tunnel
        self.onEnd = onEnd
    }

    /// Starts both directions; `leftover` came after the upstream's `101` head.
    func start(leftover: [UInt8]) {
        let bound = QueueBound(WeakReference(self), context: self.exchange.context)
        self.tunnel.start(queue: self.exchange.context.queue) { event in
            bound.execute { reference in
                guard let pump = reference.object else { return }
                switch event {
                case .readable: pump.receiveFromUpstream()
                case .writable: pump.sendToUpstream()
                }
            }
        }
        self.exchange.onWritable = { [weak self] in self?.receiveFromUpstream() }
        if !leftover.isEmpty {
            self.exchange.sendBody(leftover)
        }
        self.exchange.readBody { [weak self] event in self?.clientSent(event) }
        // libcurl may hold decrypted bytes already: read before waiting for the socket.
        self.receiveFromUpstream()
    }

    /// Closes the upstream side; the exchange is left to its owner.
    func close() {
        guard !self.closed else { return }
        self.closed = true
        self.exchange.onWritable = nil
        self.tunnel.close()
    }

    // MARK: Client to upstream

    private func clientSent(_ event: RequestBodyEvent) {
        guard !self.closed else { return }
        switch event {
        case .bytes(let bytes):
            self.pending.append(contentsOf: bytes)
        case .end:
            self.clientEnded = true
        }
        self.sendToUpstream()
    }

    private func sendToUpstream() {
        guard !self.closed else { return }
        while true {
            if self.inFlight.isEmpty {
                guard !self.pending.isEmpty else { break }
                let count = min(self.pending.count, 16_384)
                self.inFlight = self.pending.withUnsafeReadableBytes { Array($0.prefix(count)) }
                self.pending.consume(count)
            }
            let outcome = self.inFlight.withUnsafeBytes { self.tunnel.send($0) }
            switch outcome {
            case .done(let count):
                self.inFlight.removeFirst(min(count, self.inFlight.count))
            case .wouldBlock:
                self.waitForUpstreamWritable(true)
                self.pauseClient(self.pending.count >= Self.pendingMark)
                return
            case .ended, .failed:
                self.fail()
                return
            }
        }
        self.waitForUpstreamWritable(false)
        self.pauseClient(false)
        if self.clientEnded {
            self.tunnel.shutdownSending()
            self.endIfBothEnded()
        }
    }

    private func waitForUpstreamWritable(_ wait: Bool) {
        guard wait != self.waitingForUpstreamWritable else { return }
        self.waitingForUpstreamWritable = wait
        if wait {
            self.tunnel.resumeWriting()
        } else {
            self.tunnel.suspendWriting()
        }
    }

    private func pauseClient(_ pause: Bool) {
        guard pause != self.clientPaused else { return }
        self.clientPaused = pause
        if pause {
            self.exchange.pauseBody()
        } else {
            self.exchange.resumeBody()
        }
    }

    // MARK: Upstream to client

    private func receiveFromUpstream() {
        guard !self.closed, !self.upstreamEnded else { return }
        while self.exchange.isWritable {
            let tunnel = self.tunnel
            let outcome = self.receiveBuffer.withUnsafeMutableBytes { tunnel.receive(into: $0) }
            switch outcome {
            case .done(let count):
                self.exchange.sendBody(self.receiveBuffer[0..<count])
            case .wouldBlock:
                self.tunnel.resumeReading()
                return
            case .ended:
                self.upstreamEnded = true
                self.tunnel.suspendReading()
                self.exchange.endTunnelOutput()
                self.endIfBothEnded()
                return
            case .failed:
                self.fail()
                return
            }
        }
        // The client is slow: the upstream is not read until it took its bytes (`onWritable`).
        self.tunnel.suspendReading()
    }

    // MARK: The end

    private func endIfBothEnded() {
        guard self.clientEnded, self.upstreamEnded, self.pending.isEmpty, self.inFlight.isEmpty else { return }
        self.close()
        self.exchange.finish()
        self.onEnd()
    }

    private func fail() {
        self.close()
        self.exchange.abort()
        self.onEnd()
    }
}

@available(*, unavailable)
extension TunnelPump: Sendable {}
