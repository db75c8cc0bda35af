import Crypto
import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxyCore

/// A proxy with the libcurl forwarder in front of a ``FakeUpstream``.
final class ForwardingFixture {
    let upstream: FakeUpstream
    let proxy: TestProxy

    init(
        provider: String = #"{"grant": "static", "token": "upstream-token-1"}"#,
        route: String = "",
        engine: (CurlEngine)? = nil,
        engines: [CurlEngine]? = nil,
        store: (any TokenStore)? = nil,
        logger: Logger = TestLogging.logger,
        upstream: FakeUpstream? = nil,
        metrics: ProxyMetrics = ProxyMetrics(),
        wrap: (CurlForwarder) -> any RouteForwarder = { $0 }
    ) throws {
        self.upstream = try upstream ?? FakeUpstream()
        let json = """
            {"providers": {"svc": \(provider)},
             "routes": [
               {"name": "api", "path_prefix": "/api", "upstream": "http://127.0.0.1:\(self.upstream.port)/base",
                "provider": "svc", "allow_insecure_upstream": true \(route)},
               {"name": "open", "path_prefix": "/open", "upstream": "http://127.0.0.1:\(self.upstream.port)/base"},
               {"name": "dead", "path_prefix": "/dead", "upstream": "http://127.0.0.1:1/"}
             ]}
            """
        let configuration = TestProxy.configuration(json)
        self.proxy = try TestProxy(
            configuration,
            forwarder: wrap(
                CurlForwarder(
                    configuration: configuration,
                    engines: engines ?? [engine ?? ForwardingFixture.engine],
                    store: store,
                    metrics: metrics,
                    logger: logger
                )
            ),
            logger: logger,
            metrics: metrics
        )
    }

    /// One engine for the whole test process, as in the proxy.
    static let engine: CurlEngine = {
        do {
            return try CurlEngine(name: "tokenproxy.test.curl")
        } catch {
            preconditionFailure("the test engine cannot start: \(error)")
        }
    }()

    func client() throws -> TestClient {
        try self.proxy.client()
    }
}

private func hex(_ digest: SHA256.Digest) -> String {
    digest.map { String(format: "%02x", $0) }.joined()
}

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
        #expect(response.header("X-Body-SHA256") == hex(SHA256.hash(data: body)))
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
        #expect(response.header("X-Body-SHA256") == hex(SHA256.hash(data: body)))
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
        let fixture = try ForwardingFixture(provider: #"{"grant": "static", "token": {"file": "\#(file)"}}"#)
        let client = try fixture.client()
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
        _ = try client.readResponse()
        #expect(fixture.upstream.requests.last?.headers.first("Authorization") == "Bearer first-token")
        try "second-token-longer\n".write(toFile: file, atomically: true, encoding: .utf8)
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

/// An engine made with an idle wait of an hour: a command or a deadline that fails to wake
/// its thread then shows as a hang, not a delay.
private func sleepyEngine(_ name: String) throws -> CurlEngine {
    try CurlEngine(name: name, idleWait: .seconds(3600))
}

struct EngineWakeUpTests {
    /// The event thread wakes only for the first command after it went to sleep. A command that
    /// arrived without a wake-up would leave its request unanswered and the client's read
    /// would time out.
    @Test
    func requestsFromManyConnectionsAtOnceAreAllAnswered() throws {
        let engine = try sleepyEngine("tokenproxy.test.wakeup")
        let fixture = try ForwardingFixture(engine: engine)
        let answered = Mutex(0)
        let failures = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let connections = 8
        let perConnection = 40
        let port = fixture.proxy.port
        for connection in 0..<connections {
            Thread.detachNewThread {
                defer { done.signal() }
                do {
                    let client = try TestClient(port: port)
                    for request in 0..<perConnection {
                        // Short pauses let the engine fall asleep between some requests.
                        if request % 8 == 0 { usleep(2000) }
                        try client.send("GET /api/c\(connection)/r\(request) HTTP/1.1\r\nHost: localhost\r\n\r\n")
                        let response = try client.readResponse()
                        guard response.status == 200,
                            response.header("X-Seen-Target") == "/base/c\(connection)/r\(request)"
                        else {
                            failures.withLock { $0.append("c\(connection) r\(request): \(response.status)") }
                            return
                        }
                        answered.withLock { $0 += 1 }
                    }
                } catch {
                    failures.withLock { $0.append("c\(connection): \(error)") }
                }
            }
        }
        for _ in 0..<connections {
            done.wait()
        }
        #expect(failures.withLock { $0 } == [])
        #expect(answered.withLock { $0 } == connections * perConnection)
    }
}

struct EngineIdleTests {
    /// A wake-up is used up by the turn it causes: once the answers are out and nothing more
    /// comes, the event thread sleeps. A wake-up signal left set (an eventfd never read)
    /// would instead turn the loop without pause, thousands of times in the window below.
    @Test
    func anEngineWithNothingToDoSleeps() throws {
        let engine = try sleepyEngine("tokenproxy.test.idle")
        let fixture = try ForwardingFixture(engine: engine)
        let client = try fixture.client()
        for request in 0..<5 {
            // Pauses let the thread fall asleep, so that some requests wake it.
            if request % 2 == 0 { usleep(20_000) }
            #expect(try client.get("/api/echo").status == 200)
        }
        // Two quiet windows: the first lets a turn still under way after the last answer end.
        usleep(100_000)
        let settled = engine.turns.load(ordering: .relaxed)
        usleep(300_000)
        let later = engine.turns.load(ordering: .relaxed)
        #expect(later - settled <= 1, "\(later - settled) turns with nothing to do")
    }
}

struct EngineDeadlineTests {
    /// A transfer started on the client's thread while the event thread sleeps sets a
    /// first-byte deadline the sleeping thread did not know about; the thread must be woken
    /// for it, or the silent upstream would hold the client for the idle wait (an hour).
    @Test
    func aDeadlineSetWhileTheEngineSleepsStillFires() throws {
        let fixture = try ForwardingFixture(
            route: #", "timeout_seconds": 1"#,
            engine: try sleepyEngine("tokenproxy.test.deadline")
        )
        let client = try fixture.client()
        // A first request lets the engine settle into its idle wait with nothing due.
        #expect(try client.get("/api/echo").status == 200)
        usleep(50_000)
        let response = try client.get("/api/silent")
        #expect(response.status == 504)
        #expect(response.header("X-Tokenproxy-Error") == "upstream_timeout")
    }
}

struct DroppedUpstreamConnectionTests {
    /// The upstream closes kept-alive connections after 0.2 s idle. The closed socket must not
    /// make the idle engine spin, and the next request must get a new connection, usually
    /// under the same descriptor number, and be answered.
    @Test
    func idleConnectionsClosedByTheUpstreamAreReplaced() throws {
        let name = "tp-drop"
        let fixture = try ForwardingFixture(
            engine: try sleepyEngine(name),
            upstream: try FakeUpstream(idleTimeout: 0.2)
        )
        let client = try fixture.client()
        for round in 0..<4 {
            let response = try client.get("/api/r\(round)")
            #expect(response.status == 200)
            #expect(response.header("X-Seen-Target") == "/base/r\(round)")
            #expect(eventually { fixture.upstream.connectionsAccepted == round + 1 })
            // Wait for the upstream's close, then measure the idle engine.
            usleep(400_000)
            let before = try #require(threadCPUTime(named: name))
            usleep(500_000)
            let after = try #require(threadCPUTime(named: name))
            // A spinning thread would use about 500 ms; an idle one close to nothing.
            #expect(after - before < .milliseconds(100))
        }
    }
}

struct ClosingUpstreamTests {
    /// An upstream answering `Connection: close` makes libcurl close the socket it has just
    /// stopped watching, with no event in between; the next connection usually gets the same
    /// descriptor number and must be watched afresh.
    @Test
    func connectionsTheUpstreamClosesAreReplaced() throws {
        let fixture = try ForwardingFixture(engine: try sleepyEngine("tp-close"))
        let client = try fixture.client()
        for round in 0..<6 {
            let path = round % 2 == 0 ? "close" : "echo"
            #expect(try client.get("/api/\(path)").status == 200)
        }
        // Every closing answer forced a new connection for the request after it.
        #expect(fixture.upstream.connectionsAccepted == 4)
    }
}

/// The user plus system CPU time of this process's thread called `name`, from /proc.
func threadCPUTime(named name: String) -> Duration? {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    for task in tasks {
        let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
        guard comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
            let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { continue }
        // Fields after the command name; utime and stime are fields 14 and 15 of the line.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Int64(fields[11]), let system = Int64(fields[12]) else { return nil }
        let ticks = Int64(sysconf(Int32(_SC_CLK_TCK)))
        return .milliseconds((user + system) * 1000 / max(ticks, 1))
    }
    return nil
}

struct SeveralEnginesTests {
    /// Each connection is served by one engine; with two, both get connections (32 of them
    /// all landing on one would happen once in two billion runs), and each keeps its own
    /// upstream connection.
    @Test func connectionsAreSpreadOverTheEngines() throws {
        let engines: [CurlEngine] = [
            try CurlEngine(name: "tokenproxy.test.a"), try CurlEngine(name: "tokenproxy.test.b"),
        ]
        let fixture = try ForwardingFixture(engines: engines)
        for connection in 0..<32 {
            let client = try fixture.client()
            for request in 0..<3 {
                try client.send("GET /api/c\(connection)/r\(request) HTTP/1.1\r\nHost: localhost\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(response.header("X-Seen-Target") == "/base/c\(connection)/r\(request)")
            }
        }
        #expect(fixture.upstream.requests.count == 96)
        #expect(fixture.upstream.connectionsAccepted == 2)
    }
}

/// Upload, download and both kinds of abort on one connection after another.
struct StreamAndAbortTests {
    @Test func forwardsStreamsAndAborts() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try client.send("POST /api/echo?k=v HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.count)\r\n\r\n")
        try client.send(body)
        let echoed = try client.readResponse()
        #expect(echoed.header("X-Body-SHA256") == hex(SHA256.hash(data: body)))
        #expect(fixture.upstream.requests.last?.headers.first("Authorization") == "Bearer upstream-token-1")

        try client.send("GET /api/download/2000000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let head = try client.readHead()
        var received = 0
        #expect(try client.streamBody(of: head) { received += $0.count })
        #expect(received == 2_000_000)

        try client.send("GET /api/reset/100000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let broken = try client.readHead()
        #expect(try !client.streamBody(of: broken) { _ in })

        let leaving = try fixture.client()
        try leaving.send("GET /api/download/100000000000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        _ = try leaving.readHead()
        leaving.closeNow()
        #expect(eventually { fixture.upstream.aborted == 1 })
    }
}

struct SecretRedactionTests {
    @Test func tokensNeverReachTheLogs() throws {
        let logs = CapturedLogs()
        let scripts = try ScriptDirectory()
        let failing = try scripts.script("fail", "echo 'cannot mint token' >&2\nexit 1")
        let fixture = try ForwardingFixture(
            provider: #"{"grant": "static", "token": "injected-secret-4711"}"#,
            logger: logs.logger()
        )
        let client = try fixture.client()
        let requests = [
            "GET /api/echo?api_key=query-secret-99 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer client-secret-1\r\n\r\n",
            "GET /dead/x HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer client-secret-1\r\n\r\n",
            "GET /api/status/401 HTTP/1.1\r\nHost: localhost\r\nCookie: session=cookie-secret-7\r\n\r\n",
        ]
        for request in requests {
            try client.send(request)
            _ = try client.readResponse()
        }
        // A provider whose command fails logs why, without any token.
        let commandFixture = try ForwardingFixture(
            provider: #"{"grant": "command", "command": ["\#(failing)"]}"#,
            logger: logs.logger()
        )
        let second = try commandFixture.client()
        try second.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer client-secret-1\r\n\r\n")
        #expect(try second.readResponse().status == 502)
        #expect(eventually { logs.text.contains("cannot mint token") })
        let text = logs.text
        #expect(text.contains("status=200"))
        for secret in ["injected-secret-4711", "client-secret-1", "query-secret-99", "cookie-secret-7"] {
            #expect(!text.contains(secret), "\(secret) reached the logs")
        }
    }
}

struct UpstreamResponseParserTests {
    private let match = Router.Match(
        route: TestProxy.configuration(
            #"{"providers": {}, "routes": [{"path_prefix": "/gh", "upstream": "https://api.example.com/v3"}]}"#
        ).routes[0],
        upstreamPath: "/x"
    )

    private var base: UpstreamURL.Base {
        get throws { try UpstreamURL.parseBase("https://api.example.com/v3") }
    }

    private func parse(_ lines: [String], head: Bool = false) throws -> HTTPResponseHead {
        var parser = UpstreamResponseParser()
        for line in lines {
            _ = parser.line(line + "\r\n")
        }
        #expect(parser.line("\r\n") == .complete)
        let match = self.match
        let base = try self.base
        return parser.head(requestIsHead: head) { LocationRewrite.rewrite($0, match: match, base: base) }
    }

    @Test func hopByHopFieldsAndThoseConnectionNamesAreDropped() throws {
        let head = try self.parse([
            "HTTP/1.1 200 OK", "Connection: keep-alive, X-Private", "X-Private: 1", "Keep-Alive: timeout=5",
            "Transfer-Encoding: chunked", "Upgrade: h2c", "Proxy-Authenticate: Basic", "Trailer: X-T", "X-Kept: yes",
        ])
        #expect(head.headers.map(\.name) == ["X-Kept"])
        #expect(head.contentLength == nil)
    }

    @Test func interimResponsesAreSkipped() {
        var parser = UpstreamResponseParser()
        #expect(parser.line("HTTP/1.1 100 Continue\r\n") == .pending)
        #expect(parser.line("\r\n") == .interim)
        #expect(parser.line("HTTP/1.1 201 Created\r\n") == .pending)
        #expect(parser.line("Content-Length: 3\r\n") == .pending)
        #expect(parser.line("\r\n") == .complete)
    }

    @Test func aReasonPhraseWithAControlCharacterIsReplaced() throws {
        let head = try self.parse(["HTTP/1.1 200 OK\rSet-Cookie: injected=1", "X-Kept: yes"])
        #expect(head.reason == nil)
        var encoder = ResponseEncoder()
        var keepAlive = true
        let bytes = encoder.encodeHead(head, requestVersion: .http1_1, requestIsHead: false, keepAlive: &keepAlive)
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK\r\nX-Kept: yes\r\n"))
        #expect(!String(decoding: bytes, as: UTF8.self).contains("injected"))
        #expect(try self.parse(["HTTP/1.1 299 Fine Enough"]).reason == "Fine Enough")
    }

    @Test func http2StatusLinesAndLengthsAreRead() throws {
        let head = try self.parse(["HTTP/2 404", "content-length: 12", "content-type: text/plain"])
        #expect(head.status == 404)
        #expect(head.contentLength == 12)
        #expect(head.headers.first("content-type") == "text/plain")
    }

    @Test(arguments: [
        ("https://api.example.com/v3/next?p=2", "/gh/next?p=2"),
        ("https://API.example.com:443/v3", "/gh"),
        ("https://api.example.com/v3#frag", "/gh#frag"),
        ("https://api.example.com/other", "https://api.example.com/other"),
        ("https://api.example.com/v30/x", "https://api.example.com/v30/x"),
        ("https://evil.example/v3/x", "https://evil.example/v3/x"),
        ("http://api.example.com/v3/x", "http://api.example.com/v3/x"),
        ("https://api.example.com:8443/v3/x", "https://api.example.com:8443/v3/x"),
        ("/relative/path", "/relative/path"),
    ])
    func locationsOnTheUpstreamOriginAreRewritten(location: String, expected: String) throws {
        #expect(LocationRewrite.rewrite(location, match: self.match, base: try self.base) == expected)
    }
}

struct UpstreamURLTests {
    @Test func theOriginComesFromTheRouteAndTheRestIsKeptByteForByte() throws {
        let base = try UpstreamURL.parseBase("https://api.example.com/v3/")
        #expect(
            try UpstreamURL.build(base: base, path: "/a%2Fb", query: "x=%2F&y=%aa")
                == "https://api.example.com/v3/a%2Fb?x=%2F&y=%aa"
        )
        #expect(try UpstreamURL.build(base: base, path: "", query: nil) == "https://api.example.com/v3")
        #expect(
            try UpstreamURL.build(base: base, path: "//evil.example/x", query: nil)
                == "https://api.example.com/v3//evil.example/x"
        )
        #expect(
            try UpstreamURL.build(base: base, path: "/@evil.example/x", query: nil)
                == "https://api.example.com/v3/@evil.example/x"
        )
    }

    @Test func aRootUpstreamKeepsTheHostWhateverThePath() throws {
        let base = try UpstreamURL.parseBase("http://127.0.0.1:9000")
        #expect(
            try UpstreamURL.build(base: base, path: "//evil.example:80/x", query: nil)
                == "http://127.0.0.1:9000//evil.example:80/x"
        )
        #expect(try UpstreamURL.build(base: base, path: "", query: "q") == "http://127.0.0.1:9000/?q")
        #expect(throws: UpstreamURL.Failure.self) {
            try UpstreamURL.build(base: base, path: "@evil.example/x", query: nil)
        }
    }

    @Test func anIPv6OriginIsRebuiltWithItsBrackets() throws {
        let base = try UpstreamURL.parseBase("http://[::1]:9000/v1/")
        #expect(base.origin == "http://[::1]:9000")
        #expect(try UpstreamURL.build(base: base, path: "/x", query: "q=1") == "http://[::1]:9000/v1/x?q=1")
        let defaultPort = try UpstreamURL.parseBase("https://API.example.com:443")
        #expect(defaultPort.origin == "https://API.example.com")
        #expect(try UpstreamURL.build(base: defaultPort, path: "", query: nil) == "https://API.example.com/")
    }

    @Test func aBaseQueryIsKeptInFront() throws {
        let base = try UpstreamURL.parseBase("https://api.example.com/v1?key=static")
        #expect(
            try UpstreamURL.build(base: base, path: "/x", query: "a=1") == "https://api.example.com/v1/x?key=static&a=1"
        )
    }
}
