import Foundation
import Testing

@testable import TokenProxyForwarding

/// Header lines a browser (or something pretending to be one) sends, and whether the proxy
/// serves them. `{P}` is the proxy's port, `{O}` another loopback port.
struct BrowserHeaderCase: CustomTestStringConvertible, Sendable {
    var headers: [String]
    var served: Bool

    init(_ served: Bool, _ headers: String...) {
        self.served = served
        self.headers = headers
    }

    var testDescription: String { (self.served ? "served: " : "refused: ") + self.headers.joined(separator: " | ") }

    func lines(proxyPort: UInt16, otherPort: UInt16) -> String {
        self.headers.map {
            $0.replacingOccurrences(of: "{P}", with: "\(proxyPort)").replacingOccurrences(
                of: "{O}",
                with: "\(otherPort)"
            )
                + "\r\n"
        }.joined()
    }
}

private let browserCases: [BrowserHeaderCase] = [
    // The user (typed URL, bookmark), the proxy's own pages, and non-browser clients.
    .init(true),
    .init(true, "Sec-Fetch-Site: none"),
    .init(true, "Sec-Fetch-Site: same-origin"),
    .init(true, "Sec-Fetch-Site: same-origin", "Origin: http://localhost:{P}"),
    .init(true, "Origin: http://127.0.0.1:{P}"),
    .init(true, "Origin: http://LOCALHOST:{P}"),
    .init(true, "Origin: HTTP://localhost:{P}"),
    .init(true, "Origin: http://localhost.:{P}"),
    .init(true, "Referer: http://127.0.0.1:{P}/api/page.html?x=1"),
    .init(true, "Sec-Fetch-Site: same-origin", "Referer: http://localhost:{P}/"),
    .init(true, "Referer: a-tool-name"),
    // Another port of the same host is another origin (and `same-site` to a browser).
    .init(false, "Sec-Fetch-Site: same-site"),
    .init(false, "Sec-Fetch-Site: same-site", "Referer: http://127.0.0.1:{O}/"),
    .init(false, "Sec-Fetch-Site: same-site", "Origin: http://127.0.0.1:{O}", "Referer: http://127.0.0.1:{O}/"),
    .init(false, "Sec-Fetch-Site: cross-site"),
    .init(false, "Origin: http://127.0.0.1:{O}"),
    .init(false, "Origin: http://localhost:{O}"),
    .init(false, "Origin: http://[::1]:{O}"),
    // The proxy listens on 127.0.0.1: whatever answers on [::1] at the same port is not it.
    .init(false, "Origin: http://[::1]:{P}"),
    .init(false, "Origin: http://localhost"),
    .init(false, "Origin: http://localhost:80"),
    .init(false, "Origin: http://localhost:"),
    .init(false, "Sec-Fetch-Site: same-origin", "Origin: http://localhost:{O}"),
    // Not the proxy's scheme, host or form.
    .init(false, "Origin: null"),
    .init(false, "Origin: https://localhost:{P}"),
    .init(false, "Origin: http://evil.example:{P}"),
    .init(false, "Origin: http://localhost.evil.example:{P}"),
    .init(false, "Origin: http://localhost:{P}/"),
    .init(false, "Origin: http://user@localhost:{P}"),
    .init(false, "Origin: http://localhost:{P} http://evil.example"),
    .init(false, "Origin: file://"),
    .init(false, "Origin: http://localhost:{P}", "Origin: http://localhost:{P}"),
    // Sec-Fetch-Site is sent once, in lowercase, by the browser only.
    .init(false, "Sec-Fetch-Site: same-origin", "Sec-Fetch-Site: same-origin"),
    .init(false, "Sec-Fetch-Site: same-origin", "Sec-Fetch-Site: cross-site"),
    .init(false, "Sec-Fetch-Site: same-origin, cross-site"),
    .init(false, "Sec-Fetch-Site: Same-Origin"),
    .init(false, "Sec-Fetch-Site: SAME-SITE"),
    .init(false, "Sec-Fetch-Site: "),
    .init(false, "Sec-Fetch-Site: nonsense"),
    // A Referer alone (browsers without Fetch Metadata send no Origin on GET).
    .init(false, "Referer: http://127.0.0.1:{O}/page"),
    .init(false, "Referer: http://evil.example/"),
    .init(false, "Referer: HTTPS://localhost:{P}/"),
    .init(false, "Referer: http://localhost:{P}/", "Referer: http://localhost:{P}/"),
]

/// A route with a credential in front of a fake upstream, for browser-forgery checks.
final class CredentialRouteFixture {
    let upstream: FakeUpstream
    let proxy: TestProxy
    static let token = "browser-forgery-token"

    init(extraJSON: String = "") throws {
        self.upstream = try FakeUpstream()
        let json = """
            {\(extraJSON) "providers": {"svc": {"grant": "static", "token": "\(Self.token)"}},
             "routes": [{"path_prefix": "/api", "upstream": "http://127.0.0.1:\(self.upstream.port)/base",
                         "provider": "svc", "allow_insecure_upstream": true}]}
            """
        self.proxy = try TestProxy.forwarding(json)
    }

    /// Whether the upstream ever received the route's credential.
    var upstreamSawTheCredential: Bool {
        self.upstream.requests.contains { $0.headers.values("Authorization").contains("Bearer \(Self.token)") }
    }
}

struct BrowserForgeryTests {
    @Test(arguments: browserCases)
    func browserHeadersDecideOverASocket(_ testCase: BrowserHeaderCase) throws {
        let fixture = try CredentialRouteFixture()
        let client = try fixture.proxy.client()
        let lines = testCase.lines(proxyPort: fixture.proxy.port, otherPort: fixture.upstream.port)
        for method in ["GET", "POST"] {
            let body = method == "POST" ? "Content-Length: 1\r\n\r\nx" : "\r\n"
            try client.send("\(method) /api/x HTTP/1.1\r\nHost: 127.0.0.1:\(fixture.proxy.port)\r\n\(lines)\(body)")
            let response = try client.readResponse()
            #expect(response.headers.allSatisfy { !$0.0.lowercased().hasPrefix("access-control-") })
            if testCase.served {
                #expect(response.status == 200)
            } else {
                #expect(response.status == 403)
                #expect(response.header("X-Tokenproxy-Error") == "cross_site_request")
            }
        }
        #expect(fixture.upstream.requests.count == (testCase.served ? 2 : 0))
        #expect(fixture.upstreamSawTheCredential == testCase.served)
    }

    @Test(arguments: [
        "TRACE /api/x", "trace /api/x", "Trace /api/x", "TRACK /api/x", "track /api/x", "Track /api/x",
        "CONNECT /api/x", "connect /api/x", "Connect http://localhost/api/x", "tRaCe http://localhost/api/x",
    ])
    func echoAndTunnelMethodsAre405InAnyCase(requestLine: String) throws {
        let fixture = try CredentialRouteFixture()
        let client = try fixture.proxy.client()
        try client.send("\(requestLine) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 405)
        #expect(response.header("X-Tokenproxy-Error") == "method_not_allowed")
        #expect(fixture.upstream.requests.isEmpty)
    }

    @Test(arguments: [
        "X-HTTP-Method-Override: TRACE", "X-HTTP-Method-Override: track", "X-HTTP-Method: Trace",
        "x-method-override: CONNECT", "X-HTTP-Method-Override: GET\r\nX-HTTP-Method-Override: trace",
    ])
    func methodOverridesToEchoMethodsAre405(header: String) throws {
        let fixture = try CredentialRouteFixture()
        let client = try fixture.proxy.client()
        try client.send("POST /api/x HTTP/1.1\r\nHost: localhost\r\n\(header)\r\nContent-Length: 0\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 405)
        #expect(response.header("X-Tokenproxy-Error") == "method_not_allowed")
        try client.send(
            "POST /api/x HTTP/1.1\r\nHost: localhost\r\nX-HTTP-Method-Override: PATCH\r\nContent-Length: 0\r\n\r\n"
        )
        #expect(try client.readResponse().status == 200)
        #expect(fixture.upstream.requests.count == 1)
    }

    @Test func aLowercaseConnectToAnAuthorityNeverReachesTheUpstream() throws {
        let fixture = try CredentialRouteFixture()
        let client = try fixture.proxy.client()
        try client.send("connect 127.0.0.1:\(fixture.upstream.port) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect([400, 405].contains(try client.readResponse().status))
        #expect(fixture.upstream.requests.isEmpty)
    }

    @Test func theSeparateAdminListenerIsAnOriginOfItsOwn() throws {
        let fixture = try CredentialRouteFixture(extraJSON: #""admin": {"listen": "127.0.0.1:0"},"#)
        guard case .inet(_, let adminPort) = try #require(fixture.proxy.addresses.admin) else {
            Issue.record("the admin listener is not on TCP")
            return
        }
        let proxyPort = fixture.proxy.port
        for (port, origin, status) in [
            (adminPort, adminPort, 200), (adminPort, proxyPort, 403), (proxyPort, adminPort, 403),
        ] {
            let client = try TestClient(port: port)
            let target = port == adminPort ? "/status" : "/api/x"
            try client.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:\(origin)\r\n\r\n")
            #expect(try client.readResponse().status == status, "port \(port), origin port \(origin)")
        }
        #expect(!fixture.upstreamSawTheCredential)
    }

    @Test func aUnixSocketListenerHasNoOriginOfItsOwn() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tp-b-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("p.sock").path
        let fixture = try CredentialRouteFixture(extraJSON: #""listen": "unix:\#(path)","#)
        for (headers, status) in [
            ("", 200), ("Sec-Fetch-Site: none\r\n", 200), ("Origin: http://localhost\r\n", 403),
            ("Origin: http://localhost:80\r\n", 403), ("Referer: http://localhost/x\r\n", 403),
        ] {
            let client = try TestClient(unixPath: path)
            try client.send("GET /api/x HTTP/1.1\r\nHost: localhost\r\n\(headers)\r\n")
            #expect(try client.readResponse().status == status, "\(headers)")
        }
        // A client on a Unix socket has no address: the upstream is told `unknown` (RFC 7239
        // §6.3), as a token that no IP parser mistakes for an address.
        #expect(fixture.upstream.requests.first?.headers.first("X-Forwarded-For") == "unknown")
    }
}
