import TokenProxySupport

/// Carrying out ``ConnectionStateMachine``'s actions: the transport's readiness reports, the
/// deadlines' instants on its one timer, the lingering close and the close.
extension HTTPConnection {
    /// Carries out one action of the state machine.
    func perform(_ action: ConnectionStateMachine.Action) {
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
        case .sendContinue:
            self.enqueue(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            self.process()
        case .deliverEnd:
            self.arm(.none)
            self.current?.deliverBody(.end)
        case .deliverTunnelInput:
            self.deliverTunnelInput()
            self.updateReadInterest()
        case .shutdownOutputWhenDrained:
            if self.output.isEmpty {
                self.perform(self.lifecycle.outputDrained())
            }
        case .shutdownOutput(let stopWaitingForWritable):
            if stopWaitingForWritable {
                self.perform(.stopWaitingForWritable)
            }
            self.transport.shutdownOutput()
        case .abortExchange:
            self.current?.abort()
        case .rejectRequest(let error):
            self.respondToBrokenRequest(error)
        case .respondTimeoutAndClose:
            self.respondToBrokenRequest(ProxyError(.requestTimeout, "the request did not arrive in time"))
        case .closeAfterFlush:
            // A flush under way (or the batch's) ends in `outputDrained`; with nothing
            // queued, the output has drained already.
            if self.output.isEmpty {
                self.perform(self.lifecycle.outputDrained())
            }
        case .flushAndClose:
            self.batching = false
            self.flush()
        case .resumeReading:
            self.transport.resumeReading()
        case .pauseReading:
            self.transport.suspendReading()
        case .waitForWritable:
            self.armSendDeadline()
            self.transport.resumeWaitingForWritable()
        case .armSendDeadline:
            self.armSendDeadline()
        case .stopWaitingForWritable:
            _ = self.deadlines.setSend(nil)
            self.transport.suspendWaitingForWritable()
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
        if self.input.isEmpty {
            self.input.removeAll()
        }
        guard !self.processing, !self.input.isEmpty else { return }
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
        case .tunnel: seconds = self.settings.tunnelIdleTimeout
        case .none:
            _ = self.deadlines.setInput(nil)
            return
        }
        self.reschedule(self.deadlines.setInput(self.transport.now.advanced(bySeconds: seconds)))
    }

    /// A client that takes no byte of its answer for the idle time (a tunnel's idle time
    /// through a tunnel) is dropped (nginx's
    /// `send_timeout`): otherwise it would hold the connection, and in the proxy an upstream
    /// transfer, for as long as it likes; it also bounds any wait for a writable event.
    private func armSendDeadline() {
        let seconds = self.lifecycle.isTunnel ? self.settings.tunnelIdleTimeout : self.settings.idleTimeout
        self.reschedule(self.deadlines.setSend(self.transport.now.advanced(bySeconds: seconds)))
    }

    private func reschedule(_ fire: MonotonicTime?) {
        if let fire {
            self.transport.scheduleTimer(at: fire)
        }
    }

    /// The transport's timer fired: the deadline that passed, if any, becomes an event.
    func timerFired() {
        guard !self.lifecycle.isClosed else { return }
        let (expired, fire) = self.deadlines.fired(now: self.transport.now)
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
        self.transport.shutdownOutput()
        self.reschedule(self.deadlines.setLinger(self.transport.now.advanced(bySeconds: Self.lingerSeconds)))
        self.updateReadInterest()
    }

    /// Ends the active exchange and closes the transport, which reports when it released
    /// the stream (for a socket: once both Dispatch sources' cancel handlers ran).
    private func closeNow() {
        if let exchange = self.current {
            self.current = nil
            exchange.connectionClosed()
        }
        self.transport.close(
            readingSuspended: !self.lifecycle.isReading,
            waitingForWritable: self.lifecycle.isWaitingForWritable
        )
        self.input.removeAll()
        self.output.removeAll()
    }
}
