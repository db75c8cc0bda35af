import Crypto
import Foundation

@testable import TokenProxyHTTP
@testable import TokenProxyServer

/// An upstream on loopback with scripted behaviours chosen by path, recording what it got.
///
/// - `/echo...`: reads the body and answers 200 with `X-Body-SHA256` and `X-Body-Length`.
/// - `/download/N`: streams N bytes (chunked, or with a length when `?length` is in the query).
/// - `/reset/N`: promises 2N bytes, sends N, then drops the connection.
/// - `/redirect-external`, `/redirect-internal`: 302 to another host, or into its own base path.
/// - `/status/N`: answers status N with a small body.
/// - `/close`: answers 200 with `Connection: close` and closes the connection.
/// - `/silent`: never answers.
/// - `/protected`: 401 for revoked tokens (``revoke(_:)``, ``refuseAllTokens()``), else 200.
final class FakeUpstream: HTTPExchangeHandler, @unchecked Sendable {
    struct Recorded {
        var method: String
        var target: String
        var headers: HTTPHeaders
        var bodyLength: Int
        var bodySHA256: String
    }

    private let lock = NSLock()
    /// Each request answered, in order (guarded by `lock`).
    private var recordedRequests: [Recorded] = []
    /// Exchanges whose client left first (guarded by `lock`).
    private var abortedExchanges = 0
    /// Exchanges of `/silent`, kept unanswered (guarded by `lock`).
    private var held: [HTTPExchange] = []
    /// Authorization values answered 401 (guarded by `lock`).
    private var revoked: Set<String> = []
    /// Whether every token is answered 401 (guarded by `lock`).
    private var refuseEveryToken = false

    /// Makes `/protected…` answer 401 to this Authorization value from now on.
    func revoke(_ authorization: String) {
        self.lock.withLock { _ = self.revoked.insert(authorization) }
    }

    /// Makes `/protected…` answer 401 to every token.
    func refuseAllTokens() {
        self.lock.withLock { self.refuseEveryToken = true }
    }
    /// The bound port: written once in `init`, before any request can arrive.
    private(set) var port: UInt16 = 0
    /// The server: written once in `init`, before any request can arrive.
    private var server: TestHTTPServer?

    /// `idleTimeout` closes kept-alive connections that carry no request for that long.
    init(idleTimeout: Double? = nil) throws {
        var settings = ConnectionSettings()
        if let idleTimeout {
            settings.idleTimeout = idleTimeout
        }
        self.server = try TestHTTPServer(settings: settings, handler: self)
        self.port = self.server?.port ?? 0
    }

    var requests: [Recorded] { self.lock.withLock { self.recordedRequests } }
    var aborted: Int { self.lock.withLock { self.abortedExchanges } }
    var connectionsAccepted: Int { self.server?.server.acceptedConnections ?? 0 }
    /// Client connections (the proxy's) open now; a connection closed by the idle timeout
    /// is no longer counted.
    var openConnections: Int { self.server?.server.openConnections ?? 0 }

    func handle(_ exchange: HTTPExchange) {
        let path = exchange.head.path
        var hasher = SHA256()
        var length = 0
        exchange.onClose = { [self] in self.lock.withLock { self.abortedExchanges += 1 } }
        exchange.readBody { [self] event in
            switch event {
            case .bytes(let bytes):
                hasher.update(data: bytes)
                length += bytes.count
            case .end:
                let digest = hasher.finalize().map { String(format: "%02x", $0) }.joined()
                self.lock.withLock {
                    self.recordedRequests.append(
                        Recorded(
                            method: exchange.head.method,
                            target: exchange.head.target,
                            headers: exchange.head.headers,
                            bodyLength: length,
                            bodySHA256: digest
                        )
                    )
                }
                self.respond(exchange, path: path, digest: digest, length: length)
            }
        }
    }

    private func respond(_ exchange: HTTPExchange, path: String, digest: String, length: Int) {
        // Routes point at `/base`; behaviours are chosen by what follows it.
        let parts = Array(path.split(separator: "/").map(String.init).drop { $0 == "base" })
        switch parts.first ?? "" {
        case "download":
            let total = Int(parts.count > 1 ? parts[1] : "0") ?? 0
            let withLength = exchange.head.query?.contains("length") == true
            self.stream(exchange, total: total, declaredLength: withLength ? Int64(total) : nil, stopAfter: nil)
        case "reset":
            let sent = Int(parts.count > 1 ? parts[1] : "0") ?? 0
            self.stream(exchange, total: sent * 2, declaredLength: Int64(sent * 2), stopAfter: sent)
        case "redirect-external":
            var headers = HTTPHeaders()
            headers.add(name: "Location", value: "https://elsewhere.example/landing")
            exchange.respond(HTTPResponse(status: 302, headers: headers, body: []))
        case "redirect-internal":
            var headers = HTTPHeaders()
            headers.add(name: "Location", value: "http://127.0.0.1:\(self.port)/base/next?page=2")
            exchange.respond(HTTPResponse(status: 302, headers: headers, body: []))
        case "status":
            let status = Int(parts.count > 1 ? parts[1] : "200") ?? 200
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "text/plain")
            exchange.respond(HTTPResponse(status: status, headers: headers, body: Array("status \(status)\n".utf8)))
        case "protected", "forbidden":
            // `forbidden` answers a refused token with 403, as some APIs do.
            let authorization = exchange.head.headers.first("Authorization") ?? ""
            let refused = self.lock.withLock { self.refuseEveryToken || self.revoked.contains(authorization) }
            var headers = HTTPHeaders()
            if refused {
                headers.add(name: "WWW-Authenticate", value: #"Bearer error="invalid_token""#)
                let status = parts.first == "forbidden" ? 403 : 401
                exchange.respond(HTTPResponse(status: status, headers: headers, body: Array("revoked\n".utf8)))
            } else {
                headers.add(name: "X-Body-SHA256", value: digest)
                exchange.respond(HTTPResponse(status: 200, headers: headers, body: Array("protected ok\n".utf8)))
            }
        case "oauth-problem":
            // An OAuth 1 provider's refusal, with the problem named in the challenge and body.
            let problem = parts.count > 1 ? parts[1] : "signature_invalid"
            var headers = HTTPHeaders()
            headers.add(name: "WWW-Authenticate", value: #"OAuth realm="fake", oauth_problem="\#(problem)""#)
            exchange.respond(HTTPResponse(status: 401, headers: headers, body: Array("oauth_problem=\(problem)".utf8)))
        case "close":
            exchange.respond(HTTPResponse(status: 200, body: Array("closing\n".utf8), closeConnection: true))
        case "silent":
            self.lock.withLock { self.held.append(exchange) }
        default:
            var headers = HTTPHeaders()
            headers.add(name: "X-Body-SHA256", value: digest)
            headers.add(name: "X-Body-Length", value: String(length))
            headers.add(name: "X-Seen-Target", value: exchange.head.target)
            headers.add(name: "X-Seen-Method", value: exchange.head.method)
            exchange.respond(HTTPResponse(status: 200, headers: headers, body: Array("echo\n".utf8)))
        }
    }

    /// The byte at `offset` of every download: a pattern that shows bytes out of order.
    static func downloadByte(at offset: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: (offset % 65536) % 251)
    }

    /// Streams `total` bytes honouring back-pressure; with `stopAfter`, aborts after that many.
    private func stream(_ exchange: HTTPExchange, total: Int, declaredLength: Int64?, stopAfter: Int?) {
        exchange.sendHead(HTTPResponseHead(status: 200, contentLength: declaredLength))
        let chunk = (0..<65536).map { Self.downloadByte(at: $0) }
        var sent = 0
        func pump() {
            while exchange.isWritable {
                if let stopAfter, sent >= stopAfter {
                    exchange.abort()
                    return
                }
                guard sent < total else {
                    exchange.finish()
                    return
                }
                let size = min(chunk.count, total - sent, (stopAfter ?? total) - sent)
                exchange.sendBody(chunk[..<size])
                sent += size
            }
            exchange.onWritable = { pump() }
        }
        pump()
    }
}

/// Reads the resident set size of this process from /proc.
enum ProcessMemory {
    static func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        let kilobytes = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
        return kilobytes * 1024
    }
}

/// Waits (without asserting any duration) until `condition` holds or a generous limit passes.
func eventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<500 {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}

/// The value `produce` gives once it gives one, trying for up to 10 seconds.
func eventually<Value>(_ produce: () -> Value?) -> Value? {
    for _ in 0..<500 {
        if let value = produce() { return value }
        usleep(20_000)
    }
    return produce()
}
