import Foundation
import Logging
import Testing
import TokenProxySupport

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
                        failures.withLockedValue { $0 += 1 }
                        return
                    }
                    usleep(100_000)
                }
            }
        }
        group.wait()
        #expect(failures.withLockedValue { $0 } == 0)
        #expect(fixture.auth.requests.count >= 2)
    }

    @Test func invalidClientIsNotRetriedAndIsReported() throws {
        let fixture = try OAuthFixture {
            $0.enqueue(.init(status: 401, body: #"{"error": "invalid_client", "error_description": "unknown client"}"#))
        }
        let response = try fixture.get()
        #expect(response.status == 502)
        #expect(response.header("X-Tokenproxy-Error") == "token_unavailable")
        // The message as docs/reference/errors.md and docs/guide/troubleshooting.md quote it.
        #expect(response.bodyText.contains("token endpoint: invalid_client: unknown client (HTTP 401)"))
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
        // A lifetime inside the refresh skew is used for half of it, then renewed.
        let fixture = try OAuthFixture { $0.expiresIn = 1 }
        #expect(try fixture.get().status == 200)
        #expect(eventually { (try? fixture.get().status) == 200 && fixture.auth.requests.count == 2 })
        let sent = fixture.forwarding.upstream.requests.compactMap { $0.headers.first("Authorization") }
        #expect(sent.first == "Bearer issued-1")
        #expect(sent.last == "Bearer issued-2")
        #expect(Set(sent) == ["Bearer issued-1", "Bearer issued-2"])
    }
}
