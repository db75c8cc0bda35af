import Foundation

@testable import TokenProxyHTTP
@testable import TokenProxyServer

/// A loopback HTTP server that serves fixed pages (every other path answers `ok`) and records
/// what it was asked: a developer's page server, or an upstream that serves HTML.
final class PageServer: HTTPExchangeHandler, @unchecked Sendable {
    struct Recorded {
        var method: String
        var target: String
        var headers: HTTPHeaders
    }

    private let pages: [String: String]
    private let lock = NSLock()
    /// Each request served, in order (guarded by `lock`).
    private var recorded: [Recorded] = []
    /// The server: written once in `init`, before any request can arrive.
    private var server: TestHTTPServer?
    /// The bound port: written once in `init`, before any request can arrive.
    private(set) var port: UInt16 = 0

    /// Serves `pages` (path → HTML).
    init(pages: [String: String]) throws {
        self.pages = pages
        self.server = try TestHTTPServer(handler: self)
        self.port = self.server?.port ?? 0
    }

    var requests: [Recorded] { self.lock.withLock { self.recorded } }

    func handle(_ exchange: HTTPExchange) {
        exchange.readBody { [self] event in
            guard case .end = event else { return }
            let head = exchange.head
            self.lock.withLock {
                self.recorded.append(Recorded(method: head.method, target: head.target, headers: head.headers))
            }
            var headers = HTTPHeaders()
            if let page = self.pages[head.path] {
                headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
                headers.add(name: "Cache-Control", value: "no-store")
                exchange.respond(HTTPResponse(status: 200, headers: headers, body: Array(page.utf8)))
            } else {
                headers.add(name: "Content-Type", value: "text/plain")
                exchange.respond(HTTPResponse(status: 200, headers: headers, body: Array("ok\n".utf8)))
            }
        }
    }
}
