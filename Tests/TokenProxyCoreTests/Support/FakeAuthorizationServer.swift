import Foundation

@testable import TokenProxyHTTP
@testable import TokenProxyServer
@testable import TokenProxySupport

/// An in-process OAuth 2 token endpoint with fault injection: scripted answers are served
/// in order, then every request gets a fresh token `issued-N`.
final class FakeAuthorizationServer: HTTPExchangeHandler, @unchecked Sendable {
    struct Answer {
        var status: Int
        var body: String
        var headers: [(String, String)] = []
        var delay: Double = 0
        /// Drop the connection instead of answering.
        var reset = false
        /// Repeat the request's Authorization header and body in the answer (`status`
        /// kept, `body` ignored), as a careless server does in its error text.
        var echo: Echo? = nil
    }

    /// The form of an echoing answer.
    enum Echo {
        /// `{"error": "invalid_client", "error_description": "…"}`.
        case json
        /// An HTML page.
        case html
    }

    struct Seen {
        var form: [String: String]
        var authorization: String?
        var accept: String?
    }

    private let lock = NSLock()
    /// Scripted answers still to serve (guarded by `lock`).
    private var script: [Answer] = []
    /// Each token request, in order (guarded by `lock`).
    private var seen: [Seen] = []
    /// Tokens issued so far (guarded by `lock`).
    private var issued = 0
    /// The server: written once in `init`, before any request can arrive.
    private var server: TestHTTPServer?
    /// The bound port: written once in `init`, before any request can arrive.
    private(set) var port: UInt16 = 0
    /// Lifetime of the default tokens (set by the test before the requests that read it).
    var expiresIn = 3600
    /// Delay of the default answers (set by the test before the requests that read it).
    var delay: Double = 0
    /// The issuer the discovery document claims (defaults to this server's origin; set by the
    /// test before the requests that read it).
    var claimedIssuer: String?
    /// A discovery document served in place of the generated one (set by the test before the
    /// requests that read it).
    var discoveryDocument: String?
    /// Discovery fetches so far (guarded by `lock`).
    private var discoveryFetches = 0

    /// How many times the discovery document was fetched.
    var discoveryRequests: Int { self.lock.withLock { self.discoveryFetches } }

    var origin: String { "http://127.0.0.1:\(self.port)" }

    init() throws {
        self.server = try TestHTTPServer(handler: self)
        self.port = self.server?.port ?? 0
    }

    var tokenURL: String { "http://127.0.0.1:\(self.port)/token" }
    var requests: [Seen] { self.lock.withLock { self.seen } }

    func enqueue(_ answers: Answer...) {
        self.enqueue(answers)
    }

    func enqueue(_ answers: [Answer]) {
        self.lock.withLock { self.script += answers }
    }

    func handle(_ exchange: HTTPExchange) {
        if exchange.head.method == "GET", exchange.head.path == "/.well-known/openid-configuration" {
            self.lock.withLock { self.discoveryFetches += 1 }
            let document =
                self.discoveryDocument ?? """
                    {"issuer": "\(self.claimedIssuer ?? self.origin)", "token_endpoint": "\(self.tokenURL)",
                     "authorization_endpoint": "\(self.origin)/authorize"}
                    """
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            exchange.respond(HTTPResponse(status: 200, headers: headers, body: Array(document.utf8)))
            return
        }
        var body: [UInt8] = []
        exchange.readBody { [self] event in
            switch event {
            case .bytes(let bytes):
                body += bytes
            case .end:
                let form = FakeOAuthProvider.decode(String(decoding: body, as: UTF8.self))
                let answer = self.lock.withLock { () -> Answer in
                    self.seen.append(
                        Seen(
                            form: form,
                            authorization: exchange.head.headers.first("Authorization"),
                            accept: exchange.head.headers.first("Accept")
                        )
                    )
                    if !self.script.isEmpty {
                        return self.script.removeFirst()
                    }
                    self.issued += 1
                    return Answer(
                        status: 200,
                        body:
                            #"{"access_token": "issued-\#(self.issued)", "token_type": "Bearer", "expires_in": \#(self.expiresIn)}"#,
                        delay: self.delay
                    )
                }
                var headers = HTTPHeaders()
                if !answer.headers.contains(where: { $0.0.lowercased() == "content-type" }) {
                    headers.add(name: "Content-Type", value: "application/json")
                }
                for (name, value) in answer.headers {
                    headers.add(name: name, value: value)
                }
                let response =
                    answer.echo.map { Self.echo($0, status: answer.status, exchange: exchange, body: body) }
                    ?? HTTPResponse(status: answer.status, headers: headers, body: Array(answer.body.utf8))
                if answer.reset {
                    exchange.sendHead(HTTPResponseHead(status: 200, contentLength: 100))
                    exchange.abort()
                } else if answer.delay > 0 {
                    let bound = QueueBound(exchange, context: exchange.context)
                    DispatchQueue.global().asyncAfter(deadline: .now() + answer.delay) {
                        bound.execute { $0.respond(response) }
                    }
                } else {
                    exchange.respond(response)
                }
            }
        }
    }

    /// An answer repeating the request: its Authorization header, its raw body, the Basic
    /// credential decoded, and each form parameter's value as sent.
    private static func echo(_ form: Echo, status: Int, exchange: HTTPExchange, body: [UInt8]) -> HTTPResponse {
        let authorization = exchange.head.headers.first("Authorization") ?? ""
        let basic = authorization.split(separator: " ").last.flatMap { Data(base64Encoded: String($0)) }
        let text =
            "you sent Authorization: \(authorization); decoded: \(basic.map { String(decoding: $0, as: UTF8.self) } ?? "")"
            + "; body: \(String(decoding: body, as: UTF8.self))"
            + "; values: \(FakeOAuthProvider.decode(String(decoding: body, as: UTF8.self)).values.sorted())"
        var headers = HTTPHeaders()
        switch form {
        case .json:
            headers.add(name: "Content-Type", value: "application/json")
            let document =
                (try? JSONSerialization.data(withJSONObject: [
                    "error": "invalid_client", "error_description": text,
                ])) ?? Data()
            return HTTPResponse(status: status, headers: headers, body: Array(document))
        case .html:
            headers.add(name: "Content-Type", value: "text/html")
            return HTTPResponse(status: status, headers: headers, body: Array("<html><body>\(text)</body></html>".utf8))
        }
    }
}
