import CCurl
import Dispatch
import Synchronization
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One upstream connection of an upgraded request: a libcurl connect-only handle
/// (`CURLOPT_CONNECT_ONLY`), so that TLS, the route's trust anchors and its client
/// certificate apply as for any request, with bytes moved by `curl_easy_send` and
/// `curl_easy_recv` (`docs/guide/websocket.md`).
///
/// Its life has two phases, each on one thread at a time: the handshake blocks on a
/// `tp-tunnel` thread (``CurlTunnelHandshake``), then the tunnel runs without blocking in the
/// client connection's context, with Dispatch sources reporting the socket's readiness. The
/// handle (and with it the socket) is freed only after both sources' cancel handlers ran,
/// so Dispatch never watches a descriptor number the process has reused.
///
/// `@unchecked Sendable`: it is handed once from the handshake thread to the context, and
/// used only there afterwards; each mutable field says so.
package final class CurlTunnel: @unchecked Sendable {
    /// The outcome of one non-blocking send or receive.
    package enum IO: Sendable, Equatable {
        /// This many bytes were sent or received (never 0).
        case done(Int)
        /// Nothing can move now: wait for the socket's readiness.
        case wouldBlock
        /// The upstream ended its sending side (a receive only).
        case ended
        /// The connection failed; libcurl's description.
        case failed(String)
    }

    /// What the sources report.
    package enum Event: Sendable {
        /// Bytes (or the end) wait to be received.
        case readable
        /// The socket takes bytes again.
        case writable
    }

    /// The connect-only handle: used by the handshake thread, then only in the context.
    private let easy: CurlEasy
    /// The connection's socket, owned by libcurl.
    package let socket: Int32
    /// The socket's read source (the connection's context only).
    private var readSource: DispatchSourceRead?
    /// The socket's write source (the connection's context only).
    private var writeSource: DispatchSourceWrite?
    /// Whether the read source is resumed (the connection's context only).
    private var reading = false
    /// Whether the write source is resumed (the connection's context only).
    private var writing = false
    /// Whether ``close()`` ran (the connection's context only).
    private var closed = false

    init(easy: CurlEasy, socket: Int32) {
        self.easy = easy
        self.socket = socket
    }

    // MARK: Sending and receiving

    /// Sends what the connection takes now of `bytes`. A send that would block must be
    /// repeated with the same bytes (TLS requires it), so callers keep them until sent.
    package func send(_ bytes: UnsafeRawBufferPointer) -> IO {
        guard !self.closed else { return .failed("closed") }
        var sent = 0
        let code = self.easy.send(bytes, sent: &sent)
        switch code {
        case CURLE_OK: return sent > 0 ? .done(sent) : .wouldBlock
        case CURLE_AGAIN: return .wouldBlock
        default: return .failed(Self.describe(code))
        }
    }

    /// Receives what the connection has now into `buffer`.
    package func receive(into buffer: UnsafeMutableRawBufferPointer) -> IO {
        guard !self.closed else { return .failed("closed") }
        var received = 0
        let code = self.easy.receive(into: buffer, received: &received)
        switch code {
        case CURLE_OK: return received > 0 ? .done(received) : .ended
        case CURLE_AGAIN: return .wouldBlock
        default: return .failed(Self.describe(code))
        }
    }

    /// Shuts the socket's sending side: the upstream reads the end of the client's bytes. Over
    /// TLS this is the TCP end without a `close_notify` (libcurl has no call for it).
    package func shutdownSending() {
        guard !self.closed else { return }
        shutdown(self.socket, Int32(SHUT_WR))
    }

    /// libcurl's words for `code`.
    static func describe(_ code: CURLcode) -> String {
        String(cString: curl_easy_strerror(code))
    }

    // MARK: Readiness

    /// Creates the sources on `queue` (suspended until ``resumeReading()`` and
    /// ``resumeWriting()``), reporting to `handler` on that queue. The queue is the client
    /// connection's: the handler takes the connection's context where it runs
    /// (``SerialContext/run(_:)``), as the client socket's events do, rather than queueing
    /// a second block behind each report.
    package func start(queue: DispatchQueue, _ handler: @escaping @Sendable (Event) -> Void) {
        guard !self.closed, self.readSource == nil else { return }
        let readSource = DispatchSource.makeReadSource(fileDescriptor: self.socket, queue: queue)
        let writeSource = DispatchSource.makeWriteSource(fileDescriptor: self.socket, queue: queue)
        readSource.setEventHandler { handler(.readable) }
        writeSource.setEventHandler { handler(.writable) }
        // Both cancel handlers run on the queue, one after the other; the last frees the handle.
        let easy = self.easy
        let pending = Mutex(2)
        let cancelled: @Sendable () -> Void = {
            let last = pending.withLockedValue { count -> Bool in
                count -= 1
                return count == 0
            }
            if last {
                easy.cleanup()
            }
        }
        readSource.setCancelHandler(handler: cancelled)
        writeSource.setCancelHandler(handler: cancelled)
        self.readSource = readSource
        self.writeSource = writeSource
    }

    /// Reports ``Event/readable`` while bytes wait.
    package func resumeReading() {
        guard !self.closed, !self.reading, let source = self.readSource else { return }
        self.reading = true
        source.resume()
    }

    /// Stops reporting readability.
    package func suspendReading() {
        guard !self.closed, self.reading, let source = self.readSource else { return }
        self.reading = false
        source.suspend()
    }

    /// Reports ``Event/writable`` while the socket takes bytes.
    package func resumeWriting() {
        guard !self.closed, !self.writing, let source = self.writeSource else { return }
        self.writing = true
        source.resume()
    }

    /// Stops reporting writability.
    package func suspendWriting() {
        guard !self.closed, self.writing, let source = self.writeSource else { return }
        self.writing = false
        source.suspend()
    }

    /// Closes the connection: the sources are cancelled and the handle (with its socket) is
    /// freed once they are, or at once without sources. Further calls do nothing.
    package func close() {
        guard !self.closed else { return }
        self.closed = true
        guard let readSource = self.readSource, let writeSource = self.writeSource else {
            self.easy.cleanup()
            return
        }
        // A source never resumed is inactive: Dispatch requires it resumed before it cancels.
        if !self.reading {
            readSource.resume()
        }
        if !self.writing {
            writeSource.resume()
        }
        readSource.cancel()
        writeSource.cancel()
    }
}

/// An easy handle may move between threads as long as one thread at a time uses it (libcurl's
/// rule): a tunnel's handle goes from its handshake thread to its connection's context once,
/// and its last cancel handler frees it.
extension CurlEasy: @unchecked Sendable {}
