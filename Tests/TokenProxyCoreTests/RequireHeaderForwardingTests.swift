import Foundation
import Testing

@testable import TokenProxyForwarding

/// The `require_header` secret is the proxy's own: it gates requests and never reaches an
/// upstream (`docs/reference/upstream.md`, "Request headers").
struct RequireHeaderForwardingTests {
    private static let secret = "gate-secret-4f1c"

    @Test(arguments: ["X-Tokenproxy", "x-tokenproxy", "X-TOKENPROXY", "x-TokenProxy"])
    func theGateHeaderNeverReachesAnUpstream(name: String) throws {
        let upstream = try FakeUpstream()
        let origin = "http://127.0.0.1:\(upstream.port)"
        let json = """
            {"require_header": {"name": "X-Tokenproxy", "value": "\(Self.secret)"},
             "providers": {"svc": {"grant": "static", "token": "gate-test-token"}},
             "routes": [
               {"path_prefix": "/api", "upstream": "\(origin)/base", "provider": "svc", "allow_insecure_upstream": true},
               {"path_prefix": "/kept", "upstream": "\(origin)/base", "provider": "svc", "allow_insecure_upstream": true,
                "incoming_authorization": "keep", "preserve_host": true},
               {"path_prefix": "/open", "upstream": "\(origin)/base"}
             ]}
            """
        let proxy = try TestProxy.forwarding(json)
        let client = try proxy.client()
        let requests = [
            "GET /api/x HTTP/1.1\r\nHost: localhost\r\n\(name): \(Self.secret)\r\n\r\n",
            "POST /kept/x HTTP/1.1\r\nHost: localhost\r\n\(name): \(Self.secret)\r\nContent-Length: 2\r\n\r\nhi",
            "GET /open/x HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\(name): \(Self.secret)\r\n\r\n",
            "GET /open/y HTTP/1.1\r\nHost: localhost\r\n\(name):    \(Self.secret)  \r\nX-Other: 1\r\n\r\n",
        ]
        for request in requests {
            try client.send(request)
            #expect(try client.readResponse().status == 200)
        }
        let seen = upstream.requests
        #expect(seen.count == requests.count)
        for request in seen {
            for field in request.headers {
                #expect(!field.name.lowercased().contains("tokenproxy"), "\(request.target): \(field.name)")
                #expect(!field.value.contains(Self.secret), "\(request.target): \(field.name)")
            }
        }
    }
}
