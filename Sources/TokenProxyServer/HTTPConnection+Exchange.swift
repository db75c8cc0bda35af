import TokenProxyHTTP

/// What an ``HTTPExchange`` asks of its connection: the request body, and writing the response.
extension HTTPConnection: HTTPExchangeConnection {
    /// The exchange's handler asked for the request body.
    func exchangeReadBody(_ exchange: HTTPExchange) {
        guard exchange === self.current else { return }
        self.perform(self.lifecycle.bodyRequested())
    }

    /// The exchange's handler paused the request body.
    func exchangePauseBody(_ exchange: HTTPExchange) {
        guard exchange === self.current else { return }
        self.perform(self.lifecycle.bodyPaused())
        if self.lifecycle.isTunnel {
            // A tunnel's pause comes from the other side's events, outside any parse pass
            // that would look at the read interest afterwards.
            self.updateReadInterest()
        }
    }

    /// The exchange's handler resumed the request body.
    func exchangeResumeBody(_ exchange: HTTPExchange) {
        guard exchange === self.current else { return }
        self.perform(self.lifecycle.bodyResumed())
    }

    /// Whether the output buffer is below its high mark.
    var isWritable: Bool {
        self.output.count < self.settings.outputHighMark
    }

    /// Queues the response head, with the framing and keep-alive the state machine and the
    /// encoder agree on.
    func exchangeSendHead(_ exchange: HTTPExchange, _ head: HTTPResponseHead, closeConnection: Bool) {
        guard exchange === self.current else { return }
        let stays = self.lifecycle.responseStarted(closeRequested: closeConnection)
        var keepAlive = stays
        // The connection's one buffer for heads, emptied and kept, with room for a usual head
        // from the first response on.
        self.headBytes.removeAll(keepingCapacity: true)
        if self.headBytes.capacity == 0 {
            self.headBytes.reserveCapacity(512)
        }
        self.encoder.encodeHead(
            head,
            requestVersion: exchange.head.version,
            requestIsHead: exchange.head.isHead,
            keepAlive: &keepAlive,
            into: &self.headBytes
        )
        if keepAlive != stays {
            self.lifecycle.responseEndsWithTheConnection()
        }
        self.enqueue(self.headBytes)
        if self.headBytes.capacity > 16 * 1024 {
            // A large head's buffer is not kept for the connection's idle time.
            self.headBytes = []
        }
    }

    /// Writes body bytes within the framing the head announced: bytes past an announced
    /// `Content-Length` are never written, and the exchange is aborted instead (the client's
    /// next read would otherwise take them for a response of its own).
    func exchangeSendBody(_ exchange: HTTPExchange, _ bytes: UnsafeRawBufferPointer) {
        guard exchange === self.current else { return }
        if self.lifecycle.isTunnel {
            self.output.append(contentsOf: bytes)
            self.perform(self.lifecycle.tunnelBytesQueued())
            self.flush()
            return
        }
        if self.output.appending({ self.encoder.encodeBody(bytes, into: &$0) }) == .exceedsLength {
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
        guard self.lifecycle.isTunnel || self.encoder.isBodyComplete else {
            self.exchangeAbort(exchange)
            return false
        }
        if !self.lifecycle.isTunnel {
            self.output.appending { self.encoder.encodeEnd(into: &$0) }
        }
        self.current = nil
        let action = self.lifecycle.responseFinished()
        self.flush()
        self.perform(action)
        return true
    }

    /// Queues the `101 Switching Protocols` head as it is (the upstream's `Upgrade` and
    /// `Connection` fields included, no framing) and turns the connection into a tunnel.
    func exchangeUpgrade(_ exchange: HTTPExchange, _ head: HTTPResponseHead) {
        guard exchange === self.current, head.status == 101 else { return }
        var bytes = Array("HTTP/1.1 101 \(head.reason ?? "Switching Protocols")\r\n".utf8)
        head.headers.forEachField { name, value in
            bytes.append(contentsOf: name)
            bytes.append(contentsOf: [UInt8(ascii: ":"), UInt8(ascii: " ")])
            bytes.append(contentsOf: value)
            bytes.append(contentsOf: [UInt8(ascii: "\r"), UInt8(ascii: "\n")])
        }
        bytes.append(contentsOf: [UInt8(ascii: "\r"), UInt8(ascii: "\n")])
        self.output.append(contentsOf: bytes)
        self.perform(self.lifecycle.upgraded())
        self.flush()
        self.updateReadInterest()
    }

    /// The tunnel's other side sent its last byte: our sending side shuts once what is
    /// queued went out.
    func exchangeEndTunnelOutput(_ exchange: HTTPExchange) {
        guard exchange === self.current else { return }
        self.perform(self.lifecycle.tunnelOutputEnded())
    }

    /// Ends the exchange without completing its response: what was already queued (a head,
    /// part of a body) still goes out, then the connection ends.
    func exchangeAbort(_ exchange: HTTPExchange) {
        guard exchange === self.current else { return }
        self.current = nil
        self.perform(self.lifecycle.exchangeAborted())
    }
}
