import Foundation
import Logging
import Testing

@testable import TokenProxyCore

/// A proxy whose route uses a `client_credentials` provider at a fake authorization server.
/// `@unchecked Sendable`: its members are set once; each request uses a client of its own.
private final class OAuthFixture: @unchecked Sendable {
    let auth: FakeAuthorizationServer
    let forwarding: ForwardingFixture

    init(
        extra: String = "",
        route: String = "",
        logger: Logger = TestLogging.logger,
        prepare: (FakeAuthorizationServer) -> Void = { _ in }
    ) throws {
        let auth = try FakeAuthorizationServer()
        prepare(auth)
        self.auth = auth
        setenv("TOKENPROXY_TEST_CC_SECRET", "s3cr3t:&+", 1)
        self.forwarding = try ForwardingFixture(
            provider: """
                {"grant": "client_credentials", "token_url": "\(auth.tokenURL)", "allow_insecure_endpoints": true,
                 "client_id": "proxy client", "client_secret": {"env": "TOKENPROXY_TEST_CC_SECRET"},
                 "scopes": ["read", "write"], "audience": "https://api.example"\(extra)}
                """,
            route: route,
            logger: logger
        )
    }

    func get(_ path: String = "/api/echo") throws -> TestClient.Response {
        let client = try self.forwarding.client()
        try client.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try client.readResponse()
    }

    func post(_ path: String, body: [UInt8]) throws -> TestClient.Response {
        let client = try self.forwarding.client()
        try client.send("POST \(path) HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.count)\r\n\r\n")
        try client.send(body)
        return try client.readResponse()
    }
}

struct ClientCredentialsTests {
    @Test func theTokenIsFetchedSentAndCached() throws {
        let fixture = try OAuthFixture()
        #expect(try fixture.get().status == 200)
        #expect(try fixture.get().status == 200)
        #expect(fixture.auth.requests.count == 1)
        let seen = try #require(fixture.auth.requests.first)
        #expect(seen.form["grant_type"] == "client_credentials")
        #expect(seen.form["scope"] == "read write")
        #expect(seen.form["audience"] == "https://api.example")
        #expect(seen.form["client_secret"] == nil)
        #expect(seen.accept == "application/json")
        // RFC 6749 §2.3.1: form-encode id and secret, then Basic.
        let expected = Data("proxy+client:s3cr3t%3A%26%2B".utf8).base64EncodedString()
        #expect(seen.authorization == "Basic \(expected)")
        let upstreamSaw = fixture.forwarding.upstream.requests.map { $0.headers.first("Authorization") }
        #expect(upstreamSaw == ["Bearer issued-1", "Bearer issued-1"])
    }

    @Test func clientSecretPostPutsTheCredentialsInTheForm() throws {
        let fixture = try OAuthFixture(
            extra: #", "client_auth": "client_secret_post", "token_request_params": {"tenant": "t1"}"#
        )
        #expect(try fixture.get().status == 200)
        let seen = try #require(fixture.auth.requests.first)
        #expect(seen.authorization == nil)
        #expect(seen.form["client_id"] == "proxy client")
        #expect(seen.form["client_secret"] == "s3cr3t:&+")
        #expect(seen.form["tenant"] == "t1")
    }

    @Test func twoHundredConcurrentRequestsAtAColdStartMakeOneTokenRequest() throws {
        let fixture = try OAuthFixture { $0.delay = 0.5 }
        var clients: [TestClient] = []
        for _ in 0..<200 {
            let client = try fixture.forwarding.client()
            try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
            clients.append(client)
        }
        let statuses = try clients.map { try $0.readResponse().status }
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(fixture.auth.requests.count == 1)
    }

    @Test func transientFailuresAreRetried() throws {
        let fixture = try OAuthFixture {
            $0.enqueue(
                .init(status: 503, body: #"{"error": "temporarily_unavailable"}"#),
                .init(status: 429, body: #"{"error": "slow_down"}"#, headers: [("Retry-After", "0")]),
                .init(status: 500, body: "<html>oops</html>")
            )
        }
        #expect(try fixture.get().status == 200)
        #expect(fixture.auth.requests.count == 4)
    }

    @Test func aConnectionResetAtTheTokenEndpointIsRetried() throws {
        let fixture = try OAuthFixture {
            $0.enqueue(.init(status: 200, body: "", reset: true), .init(status: 200, body: "", reset: true))
        }
        #expect(try fixture.get().status == 200)
        #expect(fixture.auth.requests.count == 3)
    }

    @Test func tokensExpiringUnderLoadAreRenewedWithoutAClientSeeing401() throws {
        // Two-second tokens, renewed in the background and on demand, while 16 clients keep
        // requesting: every answer must be the upstream's 200, never a 401 or a token error.
        let fixture = try OAuthFixture(extra: #", "refresh_skew_seconds": 1"#) { $0.expiresIn = 2 }
        let failures = Locked(0)
        let group = DispatchGroup()
        for _ in 0..<16 {
            group.enter()
            // Threads of their own: blocking Dispatch's workers would starve the proxy.
            Thread.detachNewThread {
                defer { group.leave() }
                for _ in 0..<12 {
                    let response = try? fixture.get("/api/protected")
                    guard let response, response.status == 200 else {
                        failures.withLock { $0 += 1 }
                        return
                    }
                    usleep(100_000)
                }
            }
        }
        group.wait()
        #expect(failures.withLock { $0 } == 0)
        #expect(fixture.auth.requests.count >= 2)
    }

    @Test func invalidClientIsNotRetriedAndIsReported() throws {
        let fixture = try OAuthFixture {
            $0.enqueue(.init(status: 401, body: #"{"error": "invalid_client", "error_description": "unknown client"}"#))
        }
        let response = try fixture.get()
        #expect(response.status == 502)
        #expect(response.header("X-Tokenproxy-Error") == "token_unavailable")
        #expect(response.bodyText.contains("invalid_client"))
        #expect(response.bodyText.contains("unknown client"))
        #expect(response.bodyText.contains(#""provider":"svc""#))
        #expect(fixture.auth.requests.count == 1)
        #expect(fixture.forwarding.upstream.requests.isEmpty)
    }

    @Test(arguments: [
        "<html><body>Login</body></html>",
        #"{"access_token": "abc", "token_type": "Bearer""#,
        #"{"token_type": "Bearer", "expires_in": 3600}"#,
        #"{"access_token": "abc", "token_type": "MAC"}"#,
        #"{"access_token": "abc", "token_type": "Bearer", "expires_in": 99999999999}"#,
        #"{"access_token": "abc", "token_type": "Bearer", "expires_in": -1}"#,
    ])
    func unusableAnswersAreFailuresAndNothingIsCached(body: String) throws {
        let fixture = try OAuthFixture(extra: #", "refresh_skew_seconds": 1"#) {
            // The bad answer is the only one the fake gives within the wait: permanent or
            // not, the client gets 502 and no bad token is ever sent upstream.
            $0.enqueue(Array(repeating: FakeAuthorizationServer.Answer(status: 200, body: body), count: 40))
        }
        let response = try fixture.get()
        #expect(response.status == 502)
        #expect(response.header("X-Tokenproxy-Error") == "token_unavailable")
        #expect(fixture.forwarding.upstream.requests.isEmpty)
    }

    @Test func anExpiringTokenIsRenewed() throws {
        // A lifetime inside the refresh skew: every request needs a new token.
        let fixture = try OAuthFixture { $0.expiresIn = 30 }
        #expect(try fixture.get().status == 200)
        #expect(try fixture.get().status == 200)
        #expect(fixture.auth.requests.count == 2)
        let sent = fixture.forwarding.upstream.requests.map { $0.headers.first("Authorization") }
        #expect(sent == ["Bearer issued-1", "Bearer issued-2"])
    }
}

/// Behaviour 6: a 401 from the upstream re-authorizes once and replays.
struct UnauthorizedReplayTests {
    @Test func aRevokedTokenIsReplacedAndTheRequestReplayed() throws {
        let fixture = try OAuthFixture()
        #expect(try fixture.get("/api/protected").status == 200)
        fixture.forwarding.upstream.revoke("Bearer issued-1")
        let response = try fixture.get("/api/protected")
        #expect(response.status == 200)
        #expect(response.bodyText == "protected ok\n")
        #expect(fixture.auth.requests.count == 2)
        let sent = fixture.forwarding.upstream.requests.map { $0.headers.first("Authorization") }
        #expect(sent == ["Bearer issued-1", "Bearer issued-1", "Bearer issued-2"])
        // The new token is cached: no further token request.
        #expect(try fixture.get("/api/protected").status == 200)
        #expect(fixture.auth.requests.count == 2)
    }

    @Test func theAccessLinesTellATokenFetchAndAReplay() throws {
        let logs = CapturedLogs()
        let fixture = try OAuthFixture(logger: logs.logger())
        #expect(try fixture.get("/api/protected").status == 200)
        #expect(try fixture.get("/api/protected").status == 200)
        fixture.forwarding.upstream.revoke("Bearer issued-1")
        #expect(try fixture.get("/api/protected").status == 200)
        let lines = try #require(eventually { AccessLines.of(logs, count: 3) })
        // The first request waited for the first token; the second used it as cached; the
        // third was refused, and replayed with a token fetched for it.
        #expect(lines[0]["token_refreshed"] == "true")
        #expect(lines[0]["replayed"] == nil)
        #expect(lines[1]["token_refreshed"] == nil)
        #expect(lines[1]["replayed"] == nil)
        #expect(lines[2]["token_refreshed"] == "true")
        #expect(lines[2]["replayed"] == "true")
        #expect(lines.map { $0["status"] } == ["200", "200", "200"])
    }

    @Test func aReplayCarriesTheSameBody() throws {
        let fixture = try OAuthFixture()
        #expect(try fixture.get("/api/echo").status == 200)
        fixture.forwarding.upstream.revoke("Bearer issued-1")
        let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let response = try fixture.post("/api/protected", body: body)
        #expect(response.status == 200)
        let digests = fixture.forwarding.upstream.requests.suffix(2).map(\.bodySHA256)
        #expect(Set(digests).count == 1)
        #expect(response.header("X-Body-SHA256") == digests.first)
    }

    @Test func aBodyLargerThanTheReplayBufferIsNotReplayed() throws {
        let fixture = try OAuthFixture()
        #expect(try fixture.get("/api/echo").status == 200)
        fixture.forwarding.upstream.revoke("Bearer issued-1")
        let response = try fixture.post("/api/protected", body: [UInt8](repeating: 7, count: 2 * 1024 * 1024))
        #expect(response.status == 401)
        #expect(response.header("WWW-Authenticate") == #"Bearer error="invalid_token""#)
        #expect(fixture.auth.requests.count == 1)
    }

    @Test func aSecond401GoesToTheClient() throws {
        let fixture = try OAuthFixture()
        fixture.forwarding.upstream.refuseAllTokens()
        let response = try fixture.get("/api/protected")
        #expect(response.status == 401)
        #expect(response.bodyText == "revoked\n")
        #expect(fixture.auth.requests.count == 2)
        #expect(fixture.forwarding.upstream.requests.count == 2)
    }

    @Test func insufficientScopeNeverRefreshes() throws {
        let fixture = try OAuthFixture()
        #expect(try fixture.get("/api/status/403").status == 403)
        #expect(try fixture.get("/api/status/403").status == 403)
        #expect(fixture.auth.requests.count == 1)
    }

    @Test func routesWithRetryOffPassThe401() throws {
        let fixture = try OAuthFixture(route: #", "retry_on_401": false"#)
        fixture.forwarding.upstream.refuseAllTokens()
        #expect(try fixture.get("/api/protected").status == 401)
        #expect(fixture.auth.requests.count == 1)
    }
}

struct ReplayStateMachineTests {
    @Test func replaysOnceWhenTheBodyIsComplete() {
        var machine = ReplayStateMachine(enabled: true, limit: 10, hasBody: true)
        machine.bodyReceived(4)
        #expect(machine.unauthorized() == .relay)  // body not complete yet
        var complete = ReplayStateMachine(enabled: true, limit: 10, hasBody: true)
        complete.bodyReceived(10)
        complete.bodyEnded()
        #expect(complete.unauthorized() == .replay)
        #expect(complete.unauthorized() == .relay)
    }

    @Test func aBodyOverTheLimitIsNeverReplayed() {
        var machine = ReplayStateMachine(enabled: true, limit: 10, hasBody: true)
        machine.bodyReceived(11)
        #expect(!machine.keepsBody)
        machine.bodyEnded()
        #expect(machine.unauthorized() == .relay)
    }

    @Test func disabledNeverReplays() {
        var machine = ReplayStateMachine(enabled: false, limit: 10, hasBody: false)
        #expect(machine.unauthorized() == .relay)
    }

    @Test func noBodyReplaysAtOnce() {
        var machine = ReplayStateMachine(enabled: true, limit: 0, hasBody: false)
        #expect(machine.unauthorized() == .replay)
    }
}

struct TokenResponseParserTests {
    @Test func aGoodAnswer() throws {
        let body = Array(
            #"{"access_token":"t","token_type":"bearer","expires_in":"120","refresh_token":"r","scope":"a"}"#.utf8
        )
        let token = try TokenResponseParser.parse(status: 200, body: body).get()
        #expect(
            token == TokenResponse(accessToken: "t", expiresIn: 120, refreshToken: "r", scope: "a", tokenType: "bearer")
        )
    }

    @Test func oauthErrorsArePermanentOrNot() {
        func error(_ status: Int, _ body: String) -> TokenEndpointError? {
            if case .failure(let error) = TokenResponseParser.parse(status: status, body: Array(body.utf8)) {
                return error
            }
            return nil
        }
        #expect(error(400, #"{"error":"invalid_grant"}"#)?.isPermanent == true)
        #expect(error(401, #"{"error":"invalid_client"}"#)?.isPermanent == true)
        #expect(error(400, #"{"error":"unauthorized_client"}"#)?.isPermanent == true)
        #expect(error(503, #"{"error":"temporarily_unavailable"}"#)?.isPermanent == false)
        #expect(error(429, #"{"error":"slow_down"}"#)?.isPermanent == false)
        #expect(error(502, "<html>bad gateway</html>")?.isPermanent == false)
    }

    @Test func formEncodingFollowsTheURLStandard() {
        #expect(FormEncoding.encode("a b+c/d:e&f=g~h*i-j.k_l") == "a+b%2Bc%2Fd%3Ae%26f%3Dg%7Eh*i-j.k_l")
        #expect(FormEncoding.encode("caf\u{e9}") == "caf%C3%A9")
        #expect(
            FormEncoding.encode([("grant_type", "client_credentials"), ("scope", "a b")])
                == "grant_type=client_credentials&scope=a+b"
        )
    }
}

/// The access-log lines (`request`) among captured logs, as their fields.
enum AccessLines {
    /// The first `count` of them, in order, or nil while fewer were written.
    static func of(_ logs: CapturedLogs, count: Int) -> [[String: String]]? {
        let lines = logs.text.split(separator: "\n").filter { $0.hasPrefix("info request ") }
        guard lines.count >= count else { return nil }
        return lines.prefix(count).map { line in
            var fields: [String: String] = [:]
            for pair in line.dropFirst("info request ".count).split(separator: " ") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2 {
                    fields[String(parts[0])] = String(parts[1])
                }
            }
            return fields
        }
    }
}
