import Foundation
import Logging
import Testing

@testable import TokenProxyCredentials
@testable import TokenProxySupport

/// A proxy whose `client_credentials` provider asks a fake token endpoint that answers what
/// a hostile or broken server may: absurd numbers, tokens a header cannot carry, echoes of
/// the request's secrets. `store` is a file token store, so what is persisted can be read.
private final class HostileEndpointFixture {
    static let clientSecret = #"s3/cr"et:&+ x\u"#
    let auth: FakeAuthorizationServer
    let storeFixture: TokenStoreFixture
    let forwarding: ForwardingFixture
    let logs = CapturedLogs()

    init(extra: String = "") throws {
        self.auth = try FakeAuthorizationServer()
        self.storeFixture = try TokenStoreFixture()
        setenv("TOKENPROXY_TEST_HOSTILE_SECRET", Self.clientSecret, 1)
        self.forwarding = try ForwardingFixture(
            provider: """
                {"grant": "client_credentials", "token_url": "\(self.auth.tokenURL)",
                 "allow_insecure_endpoints": true, "client_id": "proxy client",
                 "client_secret": {"env": "TOKENPROXY_TEST_HOSTILE_SECRET"}\(extra)}
                """,
            limits: #""token_failure_backoff_seconds": 1"#,
            store: self.storeFixture.store(),
            logger: self.logs.logger()
        )
    }

    /// Whether a request succeeds once the failure before it is no longer remembered: the
    /// requests meanwhile get the remembered failure without a token request.
    func succeedsAfterBackoff() -> Bool {
        eventually { (try? self.get().status) == 200 }
    }

    func get() throws -> TestClient.Response {
        let client = try self.forwarding.client()
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try client.readResponse()
    }

    /// The provider's record in the store.
    func stored() throws -> StoredGrant? {
        try self.storeFixture.store().read().grants["svc"]
    }

    /// The tokens the upstream received.
    var upstreamTokens: [String?] {
        self.forwarding.upstream.requests.map { $0.headers.first("Authorization") }
    }
}

struct HostileTokenEndpointTests {
    /// A wrong client secret answered 403 with nothing in the body is a refusal: asked once,
    /// not again and again until the wait runs out (RFC 9110 §15.5).
    @Test(arguments: [(403, ""), (400, "<html><body>Bad Request</body></html>"), (401, #"{"message":"no"}"#)])
    func aClientErrorWithoutAnOAuthErrorIsAskedOnce(status: Int, body: String) throws {
        let fixture = try HostileEndpointFixture()
        fixture.auth.enqueue(.init(status: status, body: body))
        let failed = try fixture.get()
        #expect(failed.status == 502)
        #expect(failed.header("X-Tokenproxy-Error") == "token_unavailable")
        #expect(fixture.auth.requests.count == 1)
        #expect(fixture.upstreamTokens.isEmpty)
    }

    @Test(arguments: [
        "1e300", "infinity", "nan", "-5", "Thu, 01 Jan 1970 00:00:00 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "garbage",
    ])
    func retryAfterThatIsAbsurdOrPastStillRetriesWithinTheDeadline(value: String) throws {
        let fixture = try HostileEndpointFixture()
        fixture.auth.enqueue(.init(status: 429, body: #"{"error": "slow_down"}"#, headers: [("Retry-After", value)]))
        let response = try fixture.get()
        #expect(response.status == 200)
        #expect(fixture.auth.requests.count == 2)
        #expect(fixture.upstreamTokens == ["Bearer issued-1"])
    }

    @Test(arguments: [
        "Fri, 31 Dec 9999 23:59:59 GMT", "99999999999999999999999999999", String(repeating: "9", count: 400), "86400",
    ])
    func retryAfterBeyondTheDeadlineFailsAtOnceAndTheNextRequestWorks(value: String) throws {
        let fixture = try HostileEndpointFixture()
        fixture.auth.enqueue(
            .init(status: 503, body: #"{"error": "temporarily_unavailable"}"#, headers: [("Retry-After", value)])
        )
        let failed = try fixture.get()
        #expect(failed.status == 502)
        #expect(failed.header("X-Tokenproxy-Error") == "token_unavailable")
        #expect(fixture.auth.requests.count == 1)
        // The failure is remembered for the backoff (Retry-After counts up to its bound),
        // then a request asks the endpoint again.
        #expect(fixture.succeedsAfterBackoff())
        #expect(fixture.auth.requests.count == 2)
        #expect(fixture.upstreamTokens == ["Bearer issued-1"])
    }

    @Test(arguments: [
        "1e300", "-5", "0", "\"nan\"", "\"infinity\"", "\"1e300\"", "99999999999999999999999", "316224001",
        "\"soon\"",
    ])
    func absurdExpiresInIsA502AndNothingIsPersisted(value: String) throws {
        let fixture = try HostileEndpointFixture()
        fixture.auth.enqueue(
            .init(status: 200, body: #"{"access_token": "absurd-1", "token_type": "Bearer", "expires_in": \#(value)}"#)
        )
        let failed = try fixture.get()
        #expect(failed.status == 502)
        #expect(failed.header("X-Tokenproxy-Error") == "token_unavailable")
        #expect(String(decoding: failed.body, as: UTF8.self).contains("expires_in"))
        #expect(try fixture.stored()?.accessToken == nil)
        #expect(fixture.succeedsAfterBackoff())
        #expect(fixture.upstreamTokens == ["Bearer issued-1"])
        #expect(try fixture.stored()?.accessToken == "issued-1")
    }

    @Test(arguments: ["bad\r\nX-Injected: 1", "bad\u{0}token", "bad\ttoken", " padded ", "caf\u{E9}"])
    func aTokenAHeaderCannotCarryIsNeverCachedOrPersisted(token: String) throws {
        let fixture = try HostileEndpointFixture()
        let body = try JSONSerialization.data(withJSONObject: [
            "access_token": token, "token_type": "Bearer", "expires_in": 3600, "refresh_token": "rt-ok",
        ])
        fixture.auth.enqueue(.init(status: 200, body: String(decoding: body, as: UTF8.self)))
        let failed = try fixture.get()
        #expect(failed.status == 502)
        #expect(failed.header("X-Tokenproxy-Error") == "token_unavailable")
        #expect(try fixture.stored()?.accessToken == nil)
        #expect(fixture.succeedsAfterBackoff())
        #expect(fixture.upstreamTokens == ["Bearer issued-1"])
        #expect(try fixture.stored()?.accessToken == "issued-1")
    }

    @Test(arguments: [FakeAuthorizationServer.Echo.json, .html])
    func anEchoedRequestLeavesNoSecretInAnyForm(echo: FakeAuthorizationServer.Echo) throws {
        let fixture = try HostileEndpointFixture()
        // A 2xx HTML page is not retried; a 401 JSON error is not either.
        fixture.auth.enqueue(.init(status: echo == .json ? 401 : 200, body: "", echo: echo))
        let failed = try fixture.get()
        #expect(failed.status == 502)
        let secret = HostileEndpointFixture.clientSecret
        let pair = FormEncoding.encode("proxy client") + ":" + FormEncoding.encode(secret)
        let json = String(decoding: try JSONSerialization.data(withJSONObject: [secret]), as: UTF8.self)
        let forms = [
            secret, FormEncoding.encode(secret), Data(pair.utf8).base64EncodedString(), pair,
            Data(secret.utf8).base64EncodedString(), String(json.dropFirst(2).dropLast(2)),
            secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? secret,
        ]
        let body = String(decoding: failed.body, as: UTF8.self)
        let lastError = try fixture.stored()?.lastError ?? ""
        #expect(echo == .html || body.contains("you sent"))
        #expect(lastError.contains("token endpoint"))
        for form in forms {
            #expect(!body.contains(form), "502 body holds \(form)")
            #expect(!fixture.logs.text.contains(form), "logs hold \(form)")
            #expect(!lastError.contains(form), "status holds \(form)")
        }
    }

    @Test func anEchoedFormBodyLeavesNoSecretInAnyForm() throws {
        let fixture = try HostileEndpointFixture(
            extra: #", "client_auth": "client_secret_post""#
        )
        fixture.auth.enqueue(.init(status: 400, body: "", echo: .json))
        let failed = try fixture.get()
        #expect(failed.status == 502)
        let body = String(decoding: failed.body, as: UTF8.self)
        let secret = HostileEndpointFixture.clientSecret
        for form in Redaction.forms(secret) where form.count >= 4 {
            #expect(!body.contains(form), "502 body holds \(form)")
        }
        #expect(body.contains("[redacted]"))
    }

    @Test(arguments: [
        #"{"issuer": "ORIGIN", "token_endpoint": 1e300}"#, #"{"issuer": "ORIGIN", "token_endpoint": ["ORIGIN/token"]}"#,
        #"{"issuer": 12, "token_endpoint": "ORIGIN/token"}"#, #"{"issuer": "ORIGIN", "token_endpoint": null}"#,
        #"{"issuer": "ORIGIN", "token_endpoint": "ORIGIN/token", "authorization_response_iss_parameter_supported": 1e300}"#,
        "[1e300]", "1e300",
    ])
    func aDiscoveryDocumentWithWrongTypesFailsCleanly(document: String) throws {
        let auth = try FakeAuthorizationServer()
        auth.discoveryDocument = document.replacingOccurrences(of: "ORIGIN", with: auth.origin)
        let forwarding = try ForwardingFixture(
            provider: """
                {"grant": "client_credentials", "issuer": "\(auth.origin)", "allow_insecure_endpoints": true,
                 "client_id": "c", "client_secret": "discovery-secret"}
                """
        )
        let client = try forwarding.client()
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        let usable = document.contains(#""token_endpoint": "ORIGIN/token""#) && !document.contains(#""issuer": 12"#)
        #expect(response.status == (usable ? 200 : 502))
        if !usable {
            #expect(response.header("X-Tokenproxy-Error") == "token_unavailable")
        }
    }
}
