import Dispatch
import Logging
import Synchronization
import TokenProxyConfiguration
import TokenProxyHTTP
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The inbound HTTP/1.1 server: listening sockets on Dispatch, one serial queue per
/// connection, and a limit on open connections.
///
/// Each listener accepts on its own queue; each accepted connection gets a serial queue of
/// its own targeting a shared concurrent queue, so connections run in parallel while each
/// stays single-threaded.
package final class HTTPServer: Sendable {
    private struct Registry {
        /// Each open connection's drain, run in its context.
        var connections: [ObjectIdentifier: @Sendable () -> Void] = [:]
        var listeners: [Listener] = []
        var draining = false
        var drainCompletions: [@Sendable () -> Void] = []
    }

    private let settings: ConnectionSettings
    private let maxConnections: Int
    private let handler: any HTTPExchangeHandler
    private let logger: Logger
    private let workQueue = DispatchQueue(label: "tokenproxy.connections", attributes: .concurrent)
    private let registry = Mutex(Registry())
    private let acceptCount = Atomic<Int>(0)

    /// Creates a server; ``bind(_:)`` starts listening.
    package init(
        settings: ConnectionSettings,
        maxConnections: Int,
        handler: any HTTPExchangeHandler,
        logger: Logger
    ) {
        self.settings = settings
        self.maxConnections = maxConnections
        self.handler = handler
        self.logger = logger
    }

    /// The number of open client connections.
    package var openConnections: Int {
        self.registry.withLockedValue { $0.connections.count }
    }

    /// How many connections were accepted since start, refused ones included.
    var acceptedConnections: Int {
        self.acceptCount.load(ordering: .relaxed)
    }

    /// Listens on `address` and starts accepting; returns the address actually bound.
    @discardableResult
    package func bind(_ address: ListenAddress) throws(SystemError) -> ListenAddress {
        let bound = try Socket.listen(on: address)
        let queue = DispatchQueue(label: "tokenproxy.accept.\(bound.address)")
        let logger = self.logger
        let listener = Listener(
            descriptor: bound.descriptor,
            address: bound.address,
            queue: queue,
            onPause: { reason in
                logger.warning(
                    "accept paused",
                    metadata: [
                        "listen": "\(bound.address)", "reason": "\(reason)",
                        "seconds": "\(Listener.pauseSeconds)", "open": "\(self.openConnections)",
                    ]
                )
            }
        ) { [self] descriptor, peer in
            self.accepted(descriptor, peer: peer)
        }
        self.registry.withLockedValue { $0.listeners.append(listener) }
        listener.start()
        return bound.address
    }

    private func accepted(_ descriptor: Int32, peer: String) {
        self.acceptCount.add(1, ordering: .relaxed)
        let context = SerialContext(queue: DispatchQueue(label: "tokenproxy.connection", target: self.workQueue))
        let admitted = self.registry.withLockedValue { registry -> Bool in
            !registry.draining && registry.connections.count < self.maxConnections
        }
        guard admitted else {
            Self.refuse(descriptor, draining: self.registry.withLockedValue { $0.draining })
            self.logger.warning(
                "connection refused",
                metadata: ["client": "\(peer)", "open": "\(self.openConnections)"]
            )
            return
        }
        self.open(SocketTransport(descriptor: descriptor, queue: context.queue), peer: peer, context: context)
    }

    /// Registers a connection over `transport` and starts it in `context`.
    private func open<Transport: ConnectionTransport>(_ transport: Transport, peer: String, context: SerialContext) {
        let connection = HTTPConnection(
            transport: transport,
            remoteAddress: peer,
            context: context,
            settings: self.settings,
            handler: self.handler
        ) { [self] connection in
            self.closed(connection)
        }
        let bound = QueueBound(connection, context: context)
        self.registry.withLockedValue {
            $0.connections[ObjectIdentifier(connection)] = { bound.execute { $0.drain() } }
        }
        bound.execute { $0.start() }
    }

    /// Answers a connection over the limit with 503 and closes it. The answer is small enough
    /// to fit the socket buffer, so one non-blocking send suffices.
    static func refuse(_ descriptor: Int32, draining: Bool) {
        let error =
            draining
            ? ProxyError(.shuttingDown, "the proxy is shutting down")
            : ProxyError(.tooManyConnections, "too many open connections")
        let bytes = ErrorResponse.wireBytes(for: error)
        _ = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        shutdown(descriptor, Int32(SHUT_WR))
        Glibc.close(descriptor)
    }

    private func closed<Transport: ConnectionTransport>(_ connection: HTTPConnection<Transport>) {
        let completions = self.registry.withLockedValue { registry -> [@Sendable () -> Void] in
            registry.connections[ObjectIdentifier(connection)] = nil
            guard registry.draining, registry.connections.isEmpty else { return [] }
            defer { registry.drainCompletions = [] }
            return registry.drainCompletions
        }
        completions.forEach { $0() }
    }

    /// Stops accepting, lets in-flight exchanges finish and closes idle connections; calls
    /// `completion` once every connection and every listening socket is closed.
    package func drain(completion: @escaping @Sendable () -> Void) {
        // The listening sockets close on their queues; completion waits for them too, so that
        // nothing is listening any more once it runs.
        let listenersClosed = DispatchGroup()
        let completion: @Sendable () -> Void = {
            listenersClosed.notify(queue: .global(), execute: completion)
        }
        let (listeners, connections, done) = self.registry.withLockedValue { registry in
            registry.draining = true
            let listeners = registry.listeners
            registry.listeners = []
            if !registry.connections.isEmpty {
                registry.drainCompletions.append(completion)
            }
            return (listeners, Array(registry.connections.values), registry.connections.isEmpty)
        }
        for listener in listeners {
            listenersClosed.enter()
            listener.close { listenersClosed.leave() }
        }
        for drain in connections {
            drain()
        }
        if done {
            completion()
        }
    }

    /// Stops accepting on every listener without touching open connections.
    package func closeListeners() {
        let listeners = self.registry.withLockedValue { registry in
            defer { registry.listeners = [] }
            return registry.listeners
        }
        listeners.forEach { $0.close() }
    }
}
