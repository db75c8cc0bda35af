/// The decisions of a tunnel's two directions as a pure state machine
/// (`docs/guide/websocket.md`): the client's bytes going to the upstream, each send that
/// would block and the upstream's writability watched meanwhile, the client paused while
/// too many of its bytes wait; the upstream's bytes going to the client, the upstream's
/// readability watched while it has nothing and not while the client takes nothing; each
/// side's end passed on as a half-close (RFC 9293 §3.6: a closed sending side still
/// receives); and the end, when both sides ended or either failed.
///
/// ``TunnelPump`` keeps the bytes and does the I/O: it feeds the outcome of every send and
/// receive loop in as an event and carries out the returned ``Action``. Every event has an
/// answer in every state. Once the tunnel ended every event is answered with `.none`: the
/// owner's ``TunnelPump/close()`` follows the end it was told of, and a callback inside one
/// of the pump's loops (a failed write to the client closes the exchange) can end the
/// tunnel before the loop reports what it met. An event that cannot happen while the tunnel
/// is open (client bytes after the client's end, a send after the upstream's sending side
/// was shut, a receive after the upstream's end) stops a debug build.
struct TunnelPumpStateMachine: Sendable {
    /// Client bytes waiting for the upstream above which the client is not read.
    static let pendingMark = 256 * 1024

    /// What the pump is to do.
    enum Action: Sendable, Equatable {
        /// Nothing.
        case none
        /// Send the client's queued bytes until the upstream takes no more.
        case send
        /// Receive the upstream's bytes for as long as the client takes them.
        case receive
        /// Watch the upstream's writability; pause the client too when `pauseClient`.
        case watchWritable(pauseClient: Bool)
        /// Pause the client: too many of its bytes wait for the upstream.
        case pauseClient
        /// Resume the client: its waiting bytes fell below the mark.
        case resumeClient
        /// Stop watching the upstream's writability: everything queued went; resume the
        /// client too when `resumeClient`.
        case stopWatchingWritable(resumeClient: Bool)
        /// Shut the upstream's sending side: the client ended and all its bytes went. Stop
        /// watching the upstream's writability first when `stopWatchingWritable`; when
        /// `finish`, the tunnel is over: close the upstream and finish the exchange.
        case shutUpstreamSending(stopWatchingWritable: Bool, finish: Bool)
        /// Watch the upstream's readability: it has nothing now.
        case watchReadable
        /// Stop watching the upstream's readability: the client takes nothing now, and its
        /// writability brings the next receive.
        case stopWatchingReadable
        /// Pass the upstream's end on to the client. Stop watching the upstream's readability
        /// first when `stopWatchingReadable`; when `finish`, the tunnel is over: close the
        /// upstream and finish the exchange.
        case endClientOutput(stopWatchingReadable: Bool, finish: Bool)
        /// A side failed: close the upstream and abort the exchange, so that the client sees
        /// the tunnel break off.
        case abort
        /// The owner closes: close the upstream; the exchange is the owner's.
        case close
    }

    /// The client's bytes on their way to the upstream.
    private enum ToUpstream: Sendable, Equatable {
        /// Everything queued went; the upstream's writability is not watched.
        case flowing
        /// A send would block: the upstream's writability is watched; `clientPaused` while
        /// the bytes waiting reached ``pendingMark``.
        case blocked(clientPaused: Bool)
        /// The client ended; its last bytes wait for the upstream's writability.
        case draining
        /// The client ended and all its bytes went: the upstream's sending side is shut.
        case shut
    }

    /// The upstream's bytes on their way to the client.
    private enum ToClient: Sendable, Equatable {
        /// The upstream's readability is not watched: nothing was received yet, or the
        /// client took no more and its writability brings the next receive.
        case unwatched
        /// The upstream had nothing: its readability is watched.
        case watched
        /// The upstream ended, and its end was passed on.
        case ended
    }

    private enum State: Sendable, Equatable {
        /// Bytes move; each direction says how far it got.
        case open(ToUpstream, ToClient)
        /// Both sides ended, either failed, or the owner closed: nothing more happens.
        case ended
    }

    private var state = State.open(.flowing, .unwatched)
}

extension TunnelPumpStateMachine {
    // MARK: Client to upstream

    /// Client bytes were queued for the upstream.
    mutating func clientBytesQueued() -> Action {
        switch self.state {
        case .open(.flowing, _), .open(.blocked, _):
            return .send
        case .open(.draining, _):
            // The connection delivers the client's end once, after its bytes
            // (`ConnectionStateMachine.takeTunnelInputEnd()`): nothing follows it.
            assertionFailure("client bytes after the client's end")
            return .send
        case .open(.shut, _):
            assertionFailure("client bytes after the client's end")
            return self.end(.abort)
        case .ended:
            return .none
        }
    }

    /// The client ended its sending side: its end goes to the upstream after its bytes.
    mutating func clientEnded() -> Action {
        switch self.state {
        case .open(.flowing, let toClient):
            return self.shutUpstreamSending(toClient, stopWatchingWritable: false)
        case .open(.blocked, let toClient):
            self.state = .open(.draining, toClient)
            return .send
        case .open(.draining, _), .open(.shut, _):
            assertionFailure("the client's end delivered twice")
            return .none
        case .ended:
            return .none
        }
    }

    /// A send would block with `queued` client bytes not yet handed to libcurl.
    mutating func sendWouldBlock(queued: Int) -> Action {
        let full = queued >= Self.pendingMark
        switch self.state {
        case .open(.flowing, let toClient):
            self.state = .open(.blocked(clientPaused: full), toClient)
            return .watchWritable(pauseClient: full)
        case .open(.blocked(let paused), let toClient):
            self.state = .open(.blocked(clientPaused: full), toClient)
            if full == paused { return .none }
            return full ? .pauseClient : .resumeClient
        case .open(.draining, _):
            // The client ended: there is nothing of it to pause.
            return .none
        case .open(.shut, _):
            assertionFailure("a send after the upstream's sending side was shut")
            return .none
        case .ended:
            return .none
        }
    }

    /// Every queued client byte was handed to libcurl.
    mutating func sendDrained() -> Action {
        switch self.state {
        case .open(.flowing, _):
            return .none
        case .open(.blocked(let paused), let toClient):
            self.state = .open(.flowing, toClient)
            return .stopWatchingWritable(resumeClient: paused)
        case .open(.draining, let toClient):
            return self.shutUpstreamSending(toClient, stopWatchingWritable: true)
        case .open(.shut, _):
            assertionFailure("a send after the upstream's sending side was shut")
            return .none
        case .ended:
            return .none
        }
    }

    /// The upstream's socket takes bytes again.
    mutating func upstreamWritable() -> Action {
        switch self.state {
        case .open(.blocked, _), .open(.draining, _):
            return .send
        case .open(.flowing, _), .open(.shut, _), .ended:
            // Writability is not watched: a report that was on its way when it stopped.
            return .none
        }
    }

    // MARK: Upstream to client

    /// The upstream may have bytes: its socket is readable, or the tunnel just started
    /// (libcurl may hold decrypted bytes already, which no readiness report announces).
    mutating func upstreamReadable() -> Action {
        self.receiveUnlessEnded()
    }

    /// The client took the bytes queued for it.
    mutating func clientWritable() -> Action {
        self.receiveUnlessEnded()
    }

    /// A receive found nothing.
    mutating func receiveWouldBlock() -> Action {
        switch self.state {
        case .open(let toUpstream, .unwatched):
            self.state = .open(toUpstream, .watched)
            return .watchReadable
        case .open(_, .watched):
            return .none
        case .open(_, .ended):
            assertionFailure("a receive after the upstream's end")
            return .none
        case .ended:
            return .none
        }
    }

    /// The client takes no more bytes now: receiving stops until it is writable again.
    mutating func clientFull() -> Action {
        switch self.state {
        case .open(let toUpstream, .watched):
            self.state = .open(toUpstream, .unwatched)
            return .stopWatchingReadable
        case .open(_, .unwatched):
            return .none
        case .open(_, .ended):
            assertionFailure("a receive after the upstream's end")
            return .none
        case .ended:
            return .none
        }
    }

    /// The upstream ended its sending side: its end goes to the client after its bytes, and
    /// the client may go on sending.
    mutating func upstreamEnded() -> Action {
        switch self.state {
        case .open(let toUpstream, .unwatched):
            return self.endClientOutput(toUpstream, stopWatchingReadable: false)
        case .open(let toUpstream, .watched):
            return self.endClientOutput(toUpstream, stopWatchingReadable: true)
        case .open(_, .ended):
            assertionFailure("a receive after the upstream's end")
            return .none
        case .ended:
            return .none
        }
    }

    /// A send or a receive failed, or the upstream's connection ended while the client's
    /// bytes were being sent.
    mutating func upstreamFailed() -> Action {
        self.end(.abort)
    }

    // MARK: The end

    /// The owner closes the tunnel.
    mutating func close() -> Action {
        self.end(.close)
    }

    private mutating func receiveUnlessEnded() -> Action {
        switch self.state {
        case .open(_, .unwatched), .open(_, .watched):
            return .receive
        case .open(_, .ended), .ended:
            return .none
        }
    }

    /// The client's end goes to the upstream; the tunnel is over when the upstream ended too.
    private mutating func shutUpstreamSending(_ toClient: ToClient, stopWatchingWritable: Bool) -> Action {
        guard toClient == .ended else {
            self.state = .open(.shut, toClient)
            return .shutUpstreamSending(stopWatchingWritable: stopWatchingWritable, finish: false)
        }
        self.state = .ended
        return .shutUpstreamSending(stopWatchingWritable: stopWatchingWritable, finish: true)
    }

    /// The upstream's end goes to the client; the tunnel is over when the client ended too.
    private mutating func endClientOutput(_ toUpstream: ToUpstream, stopWatchingReadable: Bool) -> Action {
        guard toUpstream == .shut else {
            self.state = .open(toUpstream, .ended)
            return .endClientOutput(stopWatchingReadable: stopWatchingReadable, finish: false)
        }
        self.state = .ended
        return .endClientOutput(stopWatchingReadable: stopWatchingReadable, finish: true)
    }

    private mutating func end(_ action: Action) -> Action {
        guard self.state != .ended else { return .none }
        self.state = .ended
        return action
    }
}
