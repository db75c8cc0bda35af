import Foundation
import Logging

@testable import TokenProxyApp
@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxyForwarding
@testable import TokenProxyHTTP
@testable import TokenProxyMetrics
@testable import TokenProxyServer
@testable import TokenProxySupport

/// A proxy service on an ephemeral loopback port for one test.
final class TestProxy {
    let service: ProxyService
    let port: UInt16
    let addresses: ProxyService.BoundAddresses

    init(
        _ configuration: ProxyConfiguration = TestProxy.configuration(),
        forwarder: any RouteForwarder = UnavailableForwarder(),
        logger: Logger = TestLogging.logger,
        metrics: ProxyMetrics = ProxyMetrics()
    ) throws {
        var configuration = configuration
        if case .inet(let host, _) = configuration.listen {
            configuration.listen = .inet(host: host, port: 0)
        }
        self.service = ProxyService(
            configuration: configuration,
            forwarder: forwarder,
            logger: logger,
            metrics: metrics
        )
        self.addresses = try self.service.start()
        guard case .inet(_, let port) = self.addresses.proxy else {
            self.port = 0
            return
        }
        self.port = port
    }

    /// A configuration decoded from JSON, with the listen address forced to an ephemeral port.
    static func configuration(_ json: String = #"{"providers": {}, "routes": []}"#) -> ProxyConfiguration {
        do {
            var configuration = try ProxyConfiguration.decode(Data(json.utf8))
            if !json.contains("\"token_store\"") {
                // Tests never touch the user's own store.
                configuration.tokenStore = .memory
            }
            return configuration
        } catch {
            preconditionFailure("test configuration does not decode: \(error)")
        }
    }

    func client() throws -> TestClient {
        try TestClient(port: self.port)
    }

    /// A proxy for the configuration `json` forwarding with libcurl through the shared test
    /// engine.
    static func forwarding(
        _ json: String,
        logger: Logger = TestLogging.logger,
        metrics: ProxyMetrics = ProxyMetrics(),
        store: (any TokenStore)? = nil
    ) throws -> TestProxy {
        let configuration = TestProxy.configuration(json)
        return try TestProxy(
            configuration,
            forwarder: CurlForwarder(
                configuration: configuration,
                engines: [ForwardingFixture.engine],
                store: store,
                metrics: metrics,
                logger: logger
            ),
            logger: logger,
            metrics: metrics
        )
    }

    deinit {
        self.service.drain(timeout: 1) { _ in }
    }
}

/// A plain HTTP server over a test handler, for server behaviour the proxy handler hides.
final class TestHTTPServer {
    let server: HTTPServer
    let port: UInt16

    init(
        settings: ConnectionSettings = ConnectionSettings(),
        maxConnections: Int = 1024,
        handler: any HTTPExchangeHandler
    ) throws {
        self.server = HTTPServer(
            settings: settings,
            maxConnections: maxConnections,
            handler: handler,
            logger: TestLogging.logger
        )
        guard case .inet(_, let port) = try self.server.bind(.inet(host: "127.0.0.1", port: 0)) else {
            throw TestClient.Failure(description: "not an inet address")
        }
        self.port = port
    }

    deinit {
        self.server.drain {}
    }
}

/// Reads the whole body, then answers with its size and a digest-free echo of the first bytes.
struct EchoHandler: HTTPExchangeHandler {
    func handle(_ exchange: HTTPExchange) {
        var received: [UInt8] = []
        exchange.readBody { event in
            switch event {
            case .bytes(let bytes):
                received += bytes
            case .end:
                var headers = HTTPHeaders()
                headers.add(name: "X-Method", value: exchange.head.method)
                headers.add(name: "X-Target", value: exchange.head.target)
                headers.add(name: "X-Body-Length", value: String(received.count))
                exchange.respond(HTTPResponse(status: 200, headers: headers, body: received))
            }
        }
    }
}

enum TestLogging {
    static let logger: Logger = {
        var logger = Logger(label: "tokenproxy.test", factory: { _ in SwiftLogNoOpLogHandler() })
        logger.logLevel = .critical
        return logger
    }()
}

/// A log handler that keeps every line (message and metadata) for assertions.
final class CapturedLogs: @unchecked Sendable {
    private let lock = NSLock()
    /// Each line as text (guarded by `lock`).
    private var lines: [String] = []
    /// Each line's message and metadata (guarded by `lock`).
    private var records: [(message: String, metadata: [String: String])] = []

    var text: String { self.lock.withLock { self.lines.joined(separator: "\n") } }

    /// Every event's message and metadata, in order, values whole (spaces included).
    var events: [(message: String, metadata: [String: String])] { self.lock.withLock { self.records } }

    func append(_ line: String) { self.lock.withLock { self.lines.append(line) } }

    func append(message: String, metadata: [String: String]) {
        self.lock.withLock { self.records.append((message, metadata)) }
    }

    /// A logger writing here at `trace` level, so nothing is filtered out.
    func logger() -> Logger {
        var logger = Logger(label: "tokenproxy.captured") { _ in CapturingLogHandler(sink: self) }
        logger.logLevel = .trace
        return logger
    }
}

struct CapturingLogHandler: LogHandler {
    let sink: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = self.metadata.merging(event.metadata ?? [:]) { $1 }
        self.sink.append("\(event.level) \(event.message) \(all.map { "\($0)=\($1)" }.sorted().joined(separator: " "))")
        self.sink.append(message: "\(event.message)", metadata: all.mapValues { "\($0)" })
    }
}
