import TokenProxySupport

extension ConnectionStateMachine {
    /// Which client deadline guards the connection's input.
    enum Timer: Sendable, Equatable {
        /// The total header deadline: the whole head must arrive before it (RFC 9112 leaves
        /// this to the server; it is total, not per read, so slowloris cannot extend it).
        case header
        /// The keep-alive idle deadline between requests.
        case idle
        /// Inactivity while reading a request body.
        case body
        /// No byte either way through an upgraded connection (`limits.tunnel_idle_seconds`).
        case tunnel
        /// No client deadline: the handler is producing the response.
        case none
    }

    /// What the connection must read next, given the state.
    enum ExpectedInput: Sendable, Equatable {
        /// The next request head.
        case head
        /// Body bytes (and the end) of the current request, for its reader.
        case body
        /// Every byte as it came, for the exchange that upgraded the connection.
        case tunnel
        /// Nothing: the current exchange holds the stream, its reader is absent or paused, or
        /// the connection is ending. Bytes stay buffered.
        case nothing
    }

    /// What the connection must do next. The state machine returns one per event; the
    /// connection carries it out and does nothing else on its own.
    enum Action: Sendable, Equatable {
        /// Nothing.
        case none
        /// Arm the input deadline for this timer (or disarm it for `.none`).
        case arm(Timer)
        /// Run the parser over the buffered input.
        case parse
        /// Input arrived while the body deadline runs: restart it, then parse.
        case armAndParse(Timer)
        /// The exchange ended and the connection stays: arm the timer and parse what is
        /// buffered, since a pipelined request may be waiting.
        case parseBuffered(Timer)
        /// Drop what was read: the connection is lingering.
        case discardInput
        /// Write `100 Continue` (RFC 9110 §10.1.1: the client waits for it before sending the
        /// body), then parse.
        case sendContinue
        /// The request is complete: no input deadline runs while the response is produced;
        /// hand `.end` to the body reader.
        case deliverEnd
        /// Hand the exchange what the client sent through the tunnel (buffered bytes, then its
        /// end once it came), as far as the exchange reads; the tunnel's deadline keeps running.
        case deliverTunnelInput
        /// The tunnel's other side ended: shut our sending side once the output drained.
        case shutdownOutputWhenDrained
        /// The output drained after the tunnel's other side ended: shut our sending side (a
        /// FIN), reading on; `stopWaitingForWritable` as its own action says.
        case shutdownOutput(stopWaitingForWritable: Bool)
        /// The request broke after its response started: abort the exchange, so the client
        /// sees the response break off.
        case abortExchange
        /// Answer this error straight onto the wire, bypassing the exchange (which ends), and
        /// close after it.
        case rejectRequest(ProxyError)
        /// Answer 408 `request_timeout` straight onto the wire, and close after it.
        case respondTimeoutAndClose
        /// Write what is queued; the connection closes lingering once it is out.
        case closeAfterFlush
        /// Write what is queued now, even inside a batch of writes; the connection closes
        /// lingering once it is out.
        case flushAndClose
        /// Resume reading the socket.
        case resumeReading
        /// Stop reading the socket.
        case pauseReading
        /// The socket refused output: wait for it to be writable and start the send deadline.
        case waitForWritable
        /// The client took bytes while output waited: it has the full send deadline again.
        case armSendDeadline
        /// The output drained: stop waiting for writability and drop the send deadline.
        case stopWaitingForWritable
        /// Shut down our sending side and read (and drop) what the client still sends until
        /// its EOF or the linger deadline; `stopWaitingForWritable` as its own action says.
        case beginLingeringClose(stopWaitingForWritable: Bool)
        /// Close now; tell an active exchange its client is gone.
        case closeNow
    }
}
