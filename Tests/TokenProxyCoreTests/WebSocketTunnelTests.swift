import Foundation
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyForwarding
@testable import TokenProxyMetrics

/// Upgrade pass-through against a real WebSocket server and client (the `websockets` package
/// from PyPI): the server takes only the bearer token it is told, so every tunnel that works
/// carried the provider's credential.
@Suite(.serialized)
struct WebSocketTunnelTests {
    private func proxy(
        upstream: String,
        provider: String = #"{"grant": "static", "token": "ws-token"}"#,
        route: String = "",
        limits: String = #"{}"#,
        logs: CapturedLogs = CapturedLogs(),
        metrics: ProxyMetrics = ProxyMetrics()
    ) throws -> TestProxy {
        let json = """
            {"providers": {"svc": \(provider)}, "limits": \(limits),
             "routes": [{"path_prefix": "/ws", "upstream": "\(upstream)", "provider": "svc",
                         "allow_insecure_upstream": true \(route)}]}
            """
        return try TestProxy.forwarding(json, logger: logs.logger(), metrics: metrics)
    }

    private static func handshake(_ path: String, extra: String = "") -> String {
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\(extra)\r\n"
    }

    @Test func textBinaryPingAndCloseCodesPassThrough() throws {
        let server = try WebSocketServer(accept: ["ws-token"])
        let logs = CapturedLogs()
        let metrics = ProxyMetrics()
        let proxy = try self.proxy(upstream: "http://127.0.0.1:\(server.port)", logs: logs, metrics: metrics)
        let url = "ws://127.0.0.1:\(proxy.port)/ws"

        let echo = try WebSocketClient.run("echo", url: url)
        #expect(echo["text"] as? Bool == true)
        #expect(echo["binary"] as? Bool == true, "1 MiB of binary came back byte for byte")
        #expect(echo["pong"] as? Bool == true)
        #expect(echo["close_code"] as? Int == 1000)

        let serverClose = try WebSocketClient.run("server-close", url: url)
        #expect(serverClose["close_code"] as? Int == 4001)
        #expect(serverClose["reason"] as? String == "closed by the server")

        _ = try WebSocketClient.run("client-close", url: url)
        #expect(eventually { (try? server.stats().closeCodes.contains(4002)) == true }, "the server saw 4002")

        // One access line per tunnel, at its end, with the bytes each way.
        #expect(
            eventually {
                logs.events.contains {
                    $0.metadata["path"] == "/ws/echo" && $0.metadata["tunnel"] == "true"
                        && $0.metadata["status"] == "101"
                        && (Int($0.metadata["request_bytes"] ?? "") ?? 0) > 1_048_576
                        && (Int($0.metadata["bytes"] ?? "") ?? 0) > 1_048_576
                }
            }
        )
        #expect(try server.stats().authorizations.allSatisfy { $0 == "Bearer ws-token" })

        // Counted as answered with 1xx, and kept out of the latency histogram.
        let exposition = { String(decoding: metrics.exposition(openConnections: 0), as: UTF8.self) }
        #expect(eventually { exposition().contains(#"tokenproxy_requests_total{route="/ws",status="1xx"} 3"#) })
        #expect(!exposition().contains(#"tokenproxy_request_duration_seconds_count{route="/ws"}"#))
    }

    @Test func aHandshakeWithADPoPBoundTokenCarriesAProofOfIt() throws {
        let authorization = try FakeDPoPServer()
        let server = try WebSocketServer(accept: [], acceptDPoP: ["dpop-token-1"])
        let proxy = try self.proxy(
            upstream: "http://127.0.0.1:\(server.port)",
            provider: """
                {"grant": "client_credentials", "token_url": "\(authorization.tokenURL)", "client_id": "c",
                 "client_secret": "s", "allow_insecure_endpoints": true, "dpop": {"alg": "ES256"}}
                """
        )
        let echo = try WebSocketClient.run("echo", url: "ws://127.0.0.1:\(proxy.port)/ws")
        #expect(echo["text"] as? Bool == true)
        let stats = try server.stats()
        #expect(stats.authorizations == ["DPoP dpop-token-1"])
        let proof = try #require(stats.proofs.first)
        let verified = try DPoPProofVerifier.verify(
            proof,
            method: "GET",
            url: "http://127.0.0.1:\(server.port)/echo",
            accessToken: "dpop-token-1"
        )
        #expect(verified.thumbprint == authorization.tokenRequests.last?.thumbprint)
    }

    @Test func theHandshakeCarriesTheCredentialNotTheClients() throws {
        let server = try WebSocketServer(accept: ["ws-token"])
        let proxy = try self.proxy(upstream: "http://127.0.0.1:\(server.port)")
        let headers = try WebSocketClient.run("headers", url: "ws://127.0.0.1:\(proxy.port)/ws")
        #expect(headers["Authorization"] as? String == "Bearer ws-token")
        #expect(headers["Upgrade"] as? String == "websocket")
        #expect(headers["Connection"] as? String == "Upgrade")
        #expect(headers["Host"] as? String == "127.0.0.1:\(server.port)")
        #expect(headers["X-Forwarded-For"] as? String == "127.0.0.1")
    }

    @Test func aRefusedTokenIsRenewedOnceAndTheHandshakeRetried() throws {
        let auth = try FakeAuthorizationServer()
        // The first token the provider issues is refused, the second taken.
        let server = try WebSocketServer(accept: ["issued-2"])
        let provider = """
            {"grant": "client_credentials", "token_url": "\(auth.tokenURL)", "client_id": "c",
             "client_secret": "s", "allow_insecure_endpoints": true}
            """
        let proxy = try self.proxy(upstream: "http://127.0.0.1:\(server.port)", provider: provider)
        let echo = try WebSocketClient.run("echo", url: "ws://127.0.0.1:\(proxy.port)/ws")
        #expect(echo["binary"] as? Bool == true)
        let stats = try server.stats()
        #expect(stats.handshakes == 2)
        #expect(stats.refused == 1)
        #expect(stats.authorizations == ["Bearer issued-1", "Bearer issued-2"])
        #expect(auth.requests.count == 2)
    }

    @Test func aSecondRefusalIsRelayedAsTheUpstreamSentIt() throws {
        let auth = try FakeAuthorizationServer()
        let server = try WebSocketServer(accept: [])
        let provider = """
            {"grant": "client_credentials", "token_url": "\(auth.tokenURL)", "client_id": "c",
             "client_secret": "s", "allow_insecure_endpoints": true}
            """
        let proxy = try self.proxy(upstream: "http://127.0.0.1:\(server.port)", provider: provider)
        let client = try TestClient(port: proxy.port)
        try client.send(Self.handshake("/ws/echo"))
        let response = try client.readResponse()
        #expect(response.status == 401)
        #expect(response.bodyText == "invalid token\n")
        #expect(response.header("Upgrade") == nil)
        #expect(try server.stats().handshakes == 2, "one replay, not more")
    }

    @Test func hundredsOfTunnelsAreOpenAtOnce() throws {
        let server = try WebSocketServer(accept: ["ws-token"])
        let proxy = try self.proxy(upstream: "http://127.0.0.1:\(server.port)")
        let result = try WebSocketClient.run("concurrent", url: "ws://127.0.0.1:\(proxy.port)/ws", ["--count", "300"])
        #expect(result["opened_together"] as? Int == 300)
        #expect(result["echoed"] as? Int == 300)
        #expect(try server.stats().maxOpen >= 300)
    }

    @Test func aSlowReaderOnEitherSideGetsEveryByte() throws {
        let server = try WebSocketServer(accept: ["ws-token"])
        let proxy = try self.proxy(upstream: "http://127.0.0.1:\(server.port)")
        let url = "ws://127.0.0.1:\(proxy.port)/ws"
        let slowClient = try WebSocketClient.run("slow-reader", url: url, ["--bytes", "\(16 << 20)"])
        #expect(slowClient["bytes"] as? Int == 16 << 20)
        #expect(slowClient["intact"] as? Bool == true)
        let slowServer = try WebSocketClient.run("slow-server", url: url, ["--bytes", "\(16 << 20)"])
        #expect(slowServer["bytes"] as? Int == 16 << 20)
        #expect(slowServer["intact"] as? Bool == true)
    }

    @Test func aPageOnAnotherOriginCannotOpenATunnel() throws {
        let server = try WebSocketServer(accept: ["ws-token"])
        let proxy = try self.proxy(upstream: "http://127.0.0.1:\(server.port)")
        let result = try WebSocketClient.run(
            "echo",
            url: "ws://127.0.0.1:\(proxy.port)/ws",
            ["--origin", "http://127.0.0.1:\(proxy.port &+ 1)"]
        )
        #expect(result["status"] as? Int == 403)
        #expect((result["body"] as? String)?.contains("cross_site_request") == true)
        #expect(try server.stats().handshakes == 0)
    }

    @Test func upgradesARouteDoesNotAllowAreRefused() throws {
        let server = try WebSocketServer(accept: ["ws-token"])
        for route in [#", "upgrade_protocols": []"#, #", "upgrade_protocols": ["h2c-other"]"#] {
            let proxy = try self.proxy(upstream: "http://127.0.0.1:\(server.port)", route: route)
            let client = try TestClient(port: proxy.port)
            try client.send(Self.handshake("/ws/echo"))
            let response = try client.readResponse()
            #expect(response.status == 400)
            #expect(response.header("X-Tokenproxy-Error") == "upgrade_not_allowed")
        }
        #expect(try server.stats().handshakes == 0)
    }

    @Test func tunnelsPastMaxTunnelsAreRefusedUntilOneEnds() throws {
        let server = try WebSocketServer(accept: ["ws-token"])
        let proxy = try self.proxy(upstream: "http://127.0.0.1:\(server.port)", limits: #"{"max_tunnels": 2}"#)
        var open: [TestClient] = []
        for _ in 0..<2 {
            let client = try TestClient(port: proxy.port)
            try client.send(Self.handshake("/ws/echo"))
            #expect(try client.readHead().status == 101)
            open.append(client)
        }
        let third = try TestClient(port: proxy.port)
        try third.send(Self.handshake("/ws/echo"))
        let refused = try third.readResponse()
        #expect(refused.status == 503)
        #expect(refused.header("X-Tokenproxy-Error") == "too_many_tunnels")

        open.removeFirst().closeNow()
        #expect(
            eventually {
                guard let client = try? TestClient(port: proxy.port) else { return false }
                try? client.send(Self.handshake("/ws/echo"))
                return (try? client.readHead().status) == 101
            },
            "a slot is free again once a tunnel ended"
        )
    }

    @Test func anIdleTunnelIsClosedOnBothSides() throws {
        let server = try WebSocketServer(accept: ["ws-token"])
        let proxy = try self.proxy(
            upstream: "http://127.0.0.1:\(server.port)",
            limits: #"{"tunnel_idle_seconds": 0.5}"#
        )
        let client = try TestClient(port: proxy.port, timeout: 30)
        try client.send(Self.handshake("/ws/headers"))
        #expect(try client.readHead().status == 101)
        // The server's one message is the only traffic; then the proxy closes the tunnel.
        _ = try client.readUntilEOF()
        #expect(client.sawEOF)
        #expect(eventually { (try? server.stats().closeCodes.isEmpty) == false }, "the server's side closed too")
    }
}

/// Half-closes and TLS: an upstream that speaks a line protocol of its own after `101`, and
/// the WebSocket server over TLS with client certificates.
@Suite(.serialized)
struct TunnelEdgeTests {
    fileprivate func proxy(route: String, limits: String = "{}") throws -> TestProxy {
        let json = """
            {"providers": {"svc": {"grant": "static", "token": "edge-token"}}, "limits": \(limits),
             "routes": [{"path_prefix": "/t", "provider": "svc", \(route)}]}
            """
        return try TestProxy.forwarding(json)
    }

    @Test func eachSidesEndIsPassedOnAsAHalfClose() throws {
        let upstream = try HalfCloseUpstream()
        let proxy = try self.proxy(
            route:
                #""upstream": "http://127.0.0.1:\#(upstream.port)", "allow_insecure_upstream": true, "upgrade_protocols": ["count"]"#
        )
        let client = try TestClient(port: proxy.port, timeout: 30)
        try client.send("GET /t/x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: upgrade\r\nUpgrade: count\r\n\r\n")
        let head = try client.readHead()
        #expect(head.status == 101)
        #expect(head.header("Upgrade") == "count")
        // The client ends its side; the upstream, having read to the end, answers and ends its own.
        try client.send(Array(repeating: UInt8(ascii: "x"), count: 300_000))
        client.shutdownWrite()
        let answer = try client.readUntilEOF()
        #expect(String(decoding: answer, as: UTF8.self) == "read 300000 bytes; authorization Bearer edge-token\n")
    }

    @Test func tlsTrustAnchorsAndClientCertificatesApplyToTheHandshake() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tp-ws-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try NginxFixture.makeCertificates(in: directory)
        let file = { (name: String) in directory.appendingPathComponent(name).path }
        let server = try WebSocketServer(
            accept: ["edge-token"],
            tls: (file("server.pem"), file("server.key")),
            clientCA: file("ca.pem")
        )
        let trusted = try self.proxy(
            route: """
                "upstream": "https://127.0.0.1:\(server.port)", "ca_file": "\(file("ca.pem"))",
                "client_cert": "\(file("client.pem"))", "client_key": {"file": "\(file("client.key"))"}
                """
        )
        let echo = try WebSocketClient.run("echo", url: "ws://127.0.0.1:\(trusted.port)/t")
        #expect(echo["binary"] as? Bool == true)

        // The system's trust anchors do not know the test CA: no tunnel, 502.
        let untrusted = try self.proxy(route: #""upstream": "https://127.0.0.1:\#(server.port)""#)
        let refused = try WebSocketClient.run("echo", url: "ws://127.0.0.1:\(untrusted.port)/t")
        #expect(refused["status"] as? Int == 502)
    }
}

extension TunnelEdgeTests {
    private static let upgrade =
        "GET /t/x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"

    @Test func aHandshakeTheClientLeftKeepsItsSlotUntilItsThreadReturns() throws {
        // An upstream that takes connections (the kernel's backlog) and never answers.
        let (silent, port) = try LoopbackSocket.listening()
        defer { close(silent) }
        let proxy = try self.proxy(
            route: #""upstream": "http://127.0.0.1:\#(port)", "allow_insecure_upstream": true, "timeout_seconds": 60"#,
            limits: #"{"max_tunnels": 2}"#
        )
        for _ in 0..<2 {
            let client = try TestClient(port: proxy.port)
            try client.send(Self.upgrade)
            client.closeNow()
        }
        // Both handshakes still wait for the silent upstream on their threads: no third starts.
        #expect(
            eventually {
                guard let client = try? TestClient(port: proxy.port) else { return false }
                try? client.send(Self.upgrade)
                return (try? client.readResponse().header("X-Tokenproxy-Error")) == "too_many_tunnels"
            }
        )
    }

    @Test func aSwitchToAProtocolNotOfferedOrAMalformedOneIsRefused() throws {
        for upgrade in ["other", "websocket\rSet-Cookie: a=b"] {
            let upstream = try RawUpstream { _ in
                RawUpstream.answer(["HTTP/1.1 101 Switching Protocols", "Upgrade: \(upgrade)", "Connection: Upgrade"])
            }
            let proxy = try self.proxy(
                route: #""upstream": "http://127.0.0.1:\#(upstream.port)", "allow_insecure_upstream": true"#
            )
            let client = try TestClient(port: proxy.port)
            try client.send(Self.upgrade)
            let response = try client.readResponse()
            #expect(response.status == 502, "Upgrade: \(upgrade)")
            #expect(response.header("Set-Cookie") == nil)
        }
    }

    @Test func theAnswerToAHeadUpgradeHasNoBodyToWaitFor() throws {
        let upstream = try RawUpstream { _ in
            RawUpstream.answer(["HTTP/1.1 426 Upgrade Required", "Content-Length: 10", "Connection: close"])
        }
        let proxy = try self.proxy(
            route:
                #""upstream": "http://127.0.0.1:\#(upstream.port)", "allow_insecure_upstream": true, "timeout_seconds": 60"#
        )
        let client = try TestClient(port: proxy.port, timeout: 20)
        try client.send(Self.upgrade.replacingOccurrences(of: "GET ", with: "HEAD "))
        let response = try client.readResponse(headRequest: true)
        #expect(response.status == 426)
    }
}

/// An upstream that answers an upgrade to `count` with 101, reads until the client's end,
/// then writes how many bytes it read (and the credential it got) and closes.
final class HalfCloseUpstream: @unchecked Sendable {
    let port: UInt16

    init() throws {
        let (listener, port) = try LoopbackSocket.listening()
        self.port = port
        Thread.detachNewThread {
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread { Self.serve(client) }
            }
        }
    }

    private static func serve(_ client: Int32) {
        defer { close(client) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var headEnd: Int?
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += chunk[0..<count]
            if headEnd == nil, let end = received.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound {
                headEnd = end
                let reply = Array(
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: count\r\nConnection: Upgrade\r\n\r\n".utf8
                )
                _ = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
        }
        guard let headEnd else { return }
        let head = String(decoding: received[..<headEnd], as: UTF8.self)
        let authorization =
            head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("authorization:") }
            .map { $0.dropFirst("authorization:".count).trimmingCharacters(in: .whitespaces) } ?? "none"
        let reply = Array("read \(received.count - headEnd) bytes; authorization \(authorization)\n".utf8)
        _ = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}

/// A real browser (headless Chromium) opening WebSockets through the proxy.
@Suite(.serialized)
struct WebSocketBrowserTests {
    @Test func aPageOnTheProxysOwnOriginOpensATunnelAndAnotherOriginCannot() throws {
        let server = try WebSocketServer(accept: ["browser-ws-token"])
        let script = """
            <script>
            const socket = new WebSocket("ws://" + location.host + "/ws/echo");
            socket.onopen = () => socket.send("from the page");
            socket.onmessage = (event) => { document.getElementById("result").textContent = "echo=" + event.data; };
            socket.onerror = () => { document.getElementById("result").textContent = "error"; };
            </script>
            """
        let page = "<!doctype html><html><body><pre id=\"result\">pending</pre>\(script)</body></html>"
        let site = try PageServer(pages: ["/site/page.html": page])
        let json = """
            {"providers": {"svc": {"grant": "static", "token": "browser-ws-token"}},
             "routes": [{"path_prefix": "/app", "upstream": "http://127.0.0.1:\(site.port)/site", "provider": "svc",
                         "allow_insecure_upstream": true},
                        {"path_prefix": "/ws", "upstream": "http://127.0.0.1:\(server.port)", "provider": "svc",
                         "allow_insecure_upstream": true}]}
            """
        let proxy = try TestProxy.forwarding(json)

        // A loaded machine may leave the socket pending when the browser's time budget ends:
        // the page is loaded again then, a bounded number of times.
        let load = { (url: String) throws -> String in
            var dom = ""
            for _ in 0..<3 {
                dom = try HeadlessChromium.dumpDOM(of: url)
                if !dom.contains("pending") { break }
            }
            return dom
        }
        let dom = try load("http://127.0.0.1:\(proxy.port)/app/page.html")
        #expect(dom.contains("echo=from the page"), "the page's WebSocket: \(dom)")
        let handshakes = try server.stats().handshakes
        #expect(handshakes >= 1)

        // The same script on a page of another origin (another port): the handshake is refused.
        let attack = try PageServer(pages: [
            "/attack.html": page.replacingOccurrences(of: "location.host", with: "\"127.0.0.1:\(proxy.port)\"")
        ])
        let attacked = try load("http://127.0.0.1:\(attack.port)/attack.html")
        #expect(attacked.contains("error"), "the other origin's WebSocket: \(attacked)")
        #expect(try server.stats().handshakes == handshakes, "no handshake reached the server")
    }
}

/// SIGTERM with a tunnel open: the proxy drains, the tunnel keeps working until the drain
/// timeout, then the process ends and the tunnel with it.
@Suite struct TunnelDrainTests {
    @Test func aTunnelOutlivesSIGTERMUntilTheDrainTimeoutThenCloses() throws {
        let upstream = try HalfCloseUpstream()
        let directory = try ScriptDirectory()
        let config = directory.path("proxy.json")
        try """
        {"listen": "127.0.0.1:0", "token_store": "memory", "limits": {"drain_timeout_seconds": 1},
         "providers": {"svc": {"grant": "static", "token": "drain-token"}},
         "routes": [{"path_prefix": "/t", "upstream": "http://127.0.0.1:\(upstream.port)", "provider": "svc",
                     "allow_insecure_upstream": true, "upgrade_protocols": ["count"]}]}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TokenProxyBinary.path)
        process.arguments = ["serve", "--config", config, "--log-format", "json"]
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
            }
            process.waitUntilExit()
        }
        let errors = ProcessErrorStream(stderr)
        let port = try #require(
            eventually {
                (errors.line("listening")?["server.address"] as? String)
                    .flatMap { $0.split(separator: ":").last }.flatMap { UInt16($0) }
            }
        )
        let client = try TestClient(port: port, timeout: 30)
        try client.send("GET /t/x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: upgrade\r\nUpgrade: count\r\n\r\n")
        #expect(try client.readHead().status == 101)

        process.terminate()
        // Still a tunnel while the proxy drains: the bytes go through.
        try client.send(Array(repeating: UInt8(ascii: "y"), count: 1000))
        // At the drain timeout the process ends, and the tunnel with it.
        _ = try client.readUntilEOF()
        #expect(client.sawEOF)
        #expect(eventually { !process.isRunning })
        #expect(errors.raw.contains("drain timeout passed"))
    }
}
