import Crypto
import Foundation
import Logging
import Synchronization
import Testing

struct ForwardingTests {
    @Test(arguments: ["GET", "DELETE", "OPTIONS"])
    func methodsWithoutBodiesAreForwarded(method: String) throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send("\(method) /api/items/7?sort=desc&x=%2F HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.header("X-Seen-Method") == method)
        #expect(response.header("X-Seen-Target") == "/base/items/7?sort=desc&x=%2F")
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.headers.first("Authorization") == "Bearer upstream-token-1")
        #expect(seen.headers.first("Host") == "127.0.0.1:\(fixture.upstream.port)")
        #expect(seen.headers.first("X-Forwarded-For") == "127.0.0.1")
        #expect(seen.headers.first("X-Forwarded-Proto") == "http")
        #expect(seen.headers.first("X-Forwarded-Host") == "localhost")
    }

    /// A reload that changes a route's provider takes effect on the next request: the routes
    /// take the providers' entries the reloaded registry holds, not the ones it retired.
    @Test func aReloadedProviderIsWhatTheNextRequestCarries() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send("GET /api/a HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(fixture.upstream.requests.last?.headers.first("Authorization") == "Bearer upstream-token-1")
        fixture.proxy.service.reload(
            TestProxy.configuration(
                """
                {"providers": {"svc": {"grant": "static", "token": "upstream-token-2"}},
                 "routes": [{"name": "api", "path_prefix": "/api",
                   "upstream": "http://127.0.0.1:\(fixture.upstream.port)/base", "provider": "svc",
                   "allow_insecure_upstream": true}]}
                """
            )
        )
        try client.send("GET /api/b HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(fixture.upstream.requests.last?.headers.first("Authorization") == "Bearer upstream-token-2")
    }

    @Test func aTokenThatCannotBeSentIsAnsweredNotForwarded() throws {
        let fixture = try ForwardingFixture(provider: #"{"grant": "static", "token": "key\u0001x"}"#)
        let client = try fixture.client()
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 502)
        #expect(String(decoding: response.body, as: UTF8.self).contains("token_unavailable"))
        #expect(fixture.upstream.requests.isEmpty)
    }

    @Test func forwardedForAccumulatesTheClientsFieldsInOrder() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send(
            "GET /api/echo HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: 10.0.0.1\r\nx-forwarded-for: 10.0.0.2\r\n"
                + "X-Forwarded-Host: evil\r\n\r\n"
        )
        #expect(try client.readResponse().status == 200)
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.headers.values("X-Forwarded-For") == ["10.0.0.1, 10.0.0.2, 127.0.0.1"])
        #expect(seen.headers.values("X-Forwarded-Host") == ["localhost"])
    }

    @Test func emptyAndLongFieldValuesArriveAsSent() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        // A value longer than the header lines usually are, so that the line handed to libcurl
        // is laid out past any small fixed size; an empty value, which libcurl would drop if
        // it were written "X-Empty:".
        let long = String((0..<6000).map { Character(UnicodeScalar(UInt8(0x41 + $0 % 26))) })
        try client.send(
            "GET /api/echo HTTP/1.1\r\nHost: localhost\r\nX-Empty: \r\nX-Long: \(long)\r\nX-Tab: a\tb\r\n\r\n"
        )
        #expect(try client.readResponse().status == 200)
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.headers.first("X-Empty") == "")
        #expect(seen.headers.first("X-Long") == long)
        #expect(seen.headers.first("X-Tab") == "a\tb")
    }

    @Test func headGetsTheLengthButNoBody() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send("HEAD /api/download/1000?length HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse(headRequest: true)
        #expect(response.status == 200)
        #expect(response.header("Content-Length") == "2000" || response.header("Content-Length") != nil)
        // The connection is still in sync: a second request works.
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().bodyText == "echo\n")
    }

    @Test(arguments: ["POST", "PUT", "PATCH"])
    func uploadsByContentLengthArriveIntact(method: String) throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        let body = (0..<(3 * 1024 * 1024 + 17)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try client.send("\(method) /api/echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.count)\r\n\r\n")
        try client.send(body)
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.header("X-Body-Length") == String(body.count))
        #expect(response.header("X-Body-SHA256") == sha256Hex(SHA256.hash(data: body)))
        #expect(fixture.upstream.requests.last?.method == method)
    }

    @Test func chunkedUploadsArriveIntact() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        var body: [UInt8] = []
        var wire = Array("POST /api/echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        for index in 0..<200 {
            let chunk = [UInt8](repeating: UInt8(index % 251), count: 1000 + index * 37)
            body += chunk
            wire += Array(String(chunk.count, radix: 16).utf8) + [13, 10] + chunk + [13, 10]
        }
        wire += Array("0\r\n\r\n".utf8)
        try client.send(wire)
        let response = try client.readResponse()
        #expect(response.header("X-Body-Length") == String(body.count))
        #expect(response.header("X-Body-SHA256") == sha256Hex(SHA256.hash(data: body)))
    }

    @Test func emptyPostKeepsItsZeroLength() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send("POST /api/echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.header("X-Body-Length") == "0")
        #expect(fixture.upstream.requests.last?.headers.first("Content-Length") == "0")
    }

    @Test func hopByHopFieldsAreRemovedBothWays() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send(
            "GET /api/echo HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive, X-Client-Hop\r\nX-Client-Hop: 1\r\n"
                + "Keep-Alive: timeout=9\r\nTE: trailers\r\nUpgrade: websocket\r\nProxy-Authorization: Basic Zm9v\r\n"
                + "Proxy-Connection: keep-alive\r\nX-End-To-End: yes\r\n\r\n"
        )
        let response = try client.readResponse()
        let seen = try #require(fixture.upstream.requests.last)
        for name in [
            "X-Client-Hop", "Keep-Alive", "TE", "Upgrade", "Proxy-Authorization", "Proxy-Connection", "Connection",
        ] {
            #expect(seen.headers.first(name) == nil, "\(name) was forwarded")
        }
        #expect(seen.headers.first("X-End-To-End") == "yes")
        #expect(response.status == 200)
    }

    @Test func connectionCannotStripTheInjectedCredential() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send(
            "GET /api/echo HTTP/1.1\r\nHost: localhost\r\nConnection: Authorization\r\nAuthorization: Bearer client-own\r\n\r\n"
        )
        _ = try client.readResponse()
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.headers.values("Authorization") == ["Bearer upstream-token-1"])
    }

    @Test func aRedirectToAnotherHostIsPassedThroughUnfollowed() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send("GET /api/redirect-external HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 302)
        #expect(response.header("Location") == "https://elsewhere.example/landing")
        #expect(fixture.upstream.requests.count == 1)
    }

    @Test func aRedirectIntoTheUpstreamIsRewrittenToTheProxyPath() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send("GET /api/redirect-internal HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 302)
        #expect(response.header("Location") == "/api/next?page=2")
    }

    @Test func pathsCannotChangeTheUpstreamHost() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        for path in ["/api/@evil.example/x", "/api//evil.example/x", "/api/%40evil.example"] {
            try client.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200, "\(path)")
            #expect(response.header("X-Seen-Target")?.hasPrefix("/base/") == true, "\(path)")
        }
        #expect(fixture.upstream.requests.count == 3)
    }

    @Test func largeDownloadsStreamInChunksWithoutALength() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send("GET /api/download/5000000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let head = try client.readHead()
        #expect(head.status == 200)
        var received = 0
        let complete = try client.streamBody(of: head) { received += $0.count }
        #expect(complete)
        #expect(received == 5_000_000)
    }

    @Test func aKnownLengthIsKept() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send("GET /api/download/300000?length HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.header("Content-Length") == "300000")
        #expect(response.body.count == 300_000)
    }

    @Test func anUpstreamResetAfterTheHeadAbortsTheClient() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send("GET /api/reset/200000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let head = try client.readHead()
        #expect(head.status == 200)
        var received = 0
        let complete = try client.streamBody(of: head) { received += $0.count }
        #expect(!complete)
        #expect(received < 400_000)
    }

    @Test func aClientThatGoesAwayAbortsTheUpstreamTransfer() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send("GET /api/download/100000000000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let head = try client.readHead()
        #expect(head.status == 200)
        client.closeNow()
        #expect(eventually { fixture.upstream.aborted == 1 })
    }

    @Test func anUnreachableUpstreamIs502() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send("GET /dead/x HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 502)
        #expect(response.header("X-Tokenproxy-Error") == "upstream_unreachable")
    }

    @Test func aSilentUpstreamIs504AfterTheFirstByteTimeout() throws {
        let fixture = try ForwardingFixture(route: #", "timeout_seconds": 1"#)
        let client = try fixture.client()
        try client.send("GET /api/silent HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 504)
        #expect(response.header("X-Tokenproxy-Error") == "upstream_timeout")
    }

    @Test func routesWithoutAProviderSendNoCredential() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        try client.send("GET /open/x HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer mine\r\n\r\n")
        _ = try client.readResponse()
        #expect(fixture.upstream.requests.last?.headers.values("Authorization") == ["Bearer mine"])
    }

    @Test func keepPassesTheClientsOwnCredentialAndInjectsOtherwise() throws {
        let fixture = try ForwardingFixture(route: #", "incoming_authorization": "keep""#)
        let client = try fixture.client()
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer mine\r\n\r\n")
        _ = try client.readResponse()
        #expect(fixture.upstream.requests.last?.headers.values("Authorization") == ["Bearer mine"])
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
        _ = try client.readResponse()
        #expect(fixture.upstream.requests.last?.headers.values("Authorization") == ["Bearer upstream-token-1"])
    }

    @Test func headerAndFormatShapeTheCredential() throws {
        let fixture = try ForwardingFixture(
            provider: #"{"grant": "static", "token": "key-123", "header": "X-Api-Key", "format": "{token}"}"#
        )
        let client = try fixture.client()
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\nX-Api-Key: client-guess\r\n\r\n")
        _ = try client.readResponse()
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.headers.values("X-Api-Key") == ["key-123"])
    }

    @Test func routeHeaderEditsApply() throws {
        let fixture = try ForwardingFixture(
            route: #", "add_headers": {"X-Team": "data"}, "remove_headers": ["X-Debug"], "preserve_host": true"#
        )
        let client = try fixture.client()
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost:8080\r\nX-Debug: 1\r\nX-Team: client\r\n\r\n")
        _ = try client.readResponse()
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.headers.first("X-Debug") == nil)
        #expect(seen.headers.values("X-Team") == ["data"])
        #expect(seen.headers.first("Host") == "localhost:8080")
    }

    @Test func fileSecretsAreReReadWhenTheFileChanges() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-static-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("token").path
        try "first-token\n".write(toFile: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)  // a secret: private
        let fixture = try ForwardingFixture(provider: #"{"grant": "static", "token": {"file": "\#(file)"}}"#)
        let client = try fixture.client()
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
        _ = try client.readResponse()
        #expect(fixture.upstream.requests.last?.headers.first("Authorization") == "Bearer first-token")
        try "second-token-longer\n".write(toFile: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)  // a secret: private
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
        _ = try client.readResponse()
        #expect(fixture.upstream.requests.last?.headers.first("Authorization") == "Bearer second-token-longer")
    }

    /// Requests written back to back are forwarded one after the other and answered in order.
    @Test func pipelinedForwardedRequestsAreAnsweredInOrder() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        let paths = (0..<6).map { "/api/pipelined/\($0)" }
        try client.send(paths.map { "GET \($0) HTTP/1.1\r\nHost: localhost\r\n\r\n" }.joined())
        for path in paths {
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.header("X-Seen-Target") == "/base" + path.dropFirst("/api".count))
        }
        #expect(fixture.upstream.requests.count == paths.count)
    }

    @Test func upstreamConnectionsAreReused() throws {
        let fixture = try ForwardingFixture()
        for _ in 0..<5 {
            let client = try fixture.client()
            try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
        #expect(fixture.upstream.requests.count == 5)
        #expect(fixture.upstream.connectionsAccepted == 1)
    }
}
