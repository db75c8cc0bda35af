import Logging
import TokenProxyServer

/// The loopback listener a browser login comes back to (RFC 8252 §7.3): 127.0.0.1 only,
/// open only while the login waits, its callback at `/callback`.
///
/// Any local process can connect to it, and browsers open connections they may never use;
/// neither must keep the real callback out. A connection's request head is due within
/// ``headerSeconds`` of its accept (a connection that sent nothing is then closed quietly,
/// a partial head gets 408), and up to ``maximumConnections`` are open at once: an idle
/// connection costs a descriptor and a few buffers, and the server's descriptor reserve
/// refuses connections before the process runs out of descriptors.
struct LoopbackListener {
    /// Seconds a connection has to deliver its whole request head; also how long a page may
    /// wait for the browser to take it. A browser sends its request as soon as it connects.
    static let headerSeconds: Double = 3
    /// Connections open at once; more are answered 503 and closed.
    static let maximumConnections = 1024

    /// The server answering the callback.
    let server: HTTPServer
    /// The port it listens on.
    let port: UInt16

    /// The callback URI the provider sends the browser to.
    var callbackURI: String { "http://127.0.0.1:\(self.port)/callback" }

    /// Listens on 127.0.0.1, on `port` or an ephemeral one, with `handler` answering.
    static func open(
        port: UInt16?,
        handler: LoopbackCallbackHandler,
        logger: Logger
    ) -> Result<LoopbackListener, LoginError> {
        let server = HTTPServer(
            settings: ConnectionSettings(headerTimeout: Self.headerSeconds, idleTimeout: Self.headerSeconds),
            maxConnections: Self.maximumConnections,
            handler: handler,
            logger: logger
        )
        do {
            let bound = try server.bind(.inet(host: "127.0.0.1", port: port ?? 0))
            guard case .inet(_, let boundPort) = bound else {
                server.closeListeners()
                return .failure(LoginError(.listenFailed, "the callback listener has no port"))
            }
            return .success(LoopbackListener(server: server, port: boundPort))
        } catch {
            return .failure(LoginError(.listenFailed, "cannot listen on 127.0.0.1 for the callback: \(error)"))
        }
    }

    /// Lets the pages already answered go out (2 seconds at most), then stops listening.
    func finish() {
        self.server.drainWithin(seconds: 2)
    }

    /// Stops listening.
    func close() {
        self.server.closeListeners()
    }
}
