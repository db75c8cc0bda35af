import Foundation
import Synchronization
import Testing
import TokenProxySupport

@testable import TokenProxyCredentials
@testable import TokenProxyUpstream

/// Runs `body` on a thread of its own (the browser acts while the login thread waits).
private func onThread(_ body: @escaping @Sendable () -> Void) {
    Thread.detachNewThread(body)
}

@Suite struct AuthorizationCodeLoginTests {
    /// With `dpop`, the code exchange carries a proof (with the nonce the token endpoint asks
    /// for), and the key the token is bound to is stored with it, for the proxy to use.
    @Test func aLoginWithDPoPStoresTheKeyItsTokenIsBoundTo() throws {
        let tokens = try FakeDPoPServer()
        let fixture = try LoginFixture(extra: #", "token_url": "\#(tokens.tokenURL)", "dpop": {"alg": "EdDSA"}"#)
        let result = fixture.codeLogin().run(timeout: 30) { prompt in
            let url = prompt.url
            onThread { _ = try? fixture.browse(url).get() }
        }
        _ = try result.get()
        #expect(tokens.tokenRequests.map(\.status) == [400, 200])
        #expect(tokens.tokenRequests.allSatisfy { $0.problem == nil })
        let stored = try #require(try fixture.store.read().grants["app"])
        #expect(stored.accessToken == "dpop-token-1")
        #expect(stored.tokenType == "DPoP")
        let pem = try #require(stored.dpopKey)
        let key = try DPoPKey(pem: pem, algorithm: .edDSA)
        #expect(tokens.tokenRequests.last?.thumbprint == key.thumbprint)
        let status = ProviderStatus.all(
            TestProxy.configuration(
                #"{"providers": {"app": {"grant": "authorization_code", "issuer": "\#(fixture.provider.origin)", "#
                    + #""client_id": "cli-1", "scopes": ["read"], "allow_insecure_endpoints": true, "#
                    + #""token_url": "\#(tokens.tokenURL)", "dpop": {"alg": "EdDSA"}}}, "routes": []}"#
            ),
            contents: try fixture.store.read()
        )
        #expect(status.first?.dpopThumbprint == key.thumbprint)
    }

    @Test func theCodeFlowRunsEndToEndAndTheProxyUsesTheResult() throws {
        let fixture = try LoginFixture()
        let upstream = try ForwardingFixture(
            provider:
                #"{"grant": "authorization_code", "issuer": "\#(fixture.provider.origin)", "client_id": "cli-1", "scopes": ["read"], "allow_insecure_endpoints": true}"#,
            store: fixture.store
        )
        // Before the login, the proxy asks for one.
        let before = try upstream.client()
        try before.send("GET /api/protected HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let refused = try before.readResponse()
        #expect(refused.status == 401)
        #expect(refused.header("X-Tokenproxy-Error") == "login_required")
        #expect(String(decoding: refused.body, as: UTF8.self).contains("tokenproxy login svc"))

        let page = Mutex<UpstreamResponse?>(nil)
        let result = fixture.codeLogin().run(timeout: 30) { prompt in
            #expect(prompt.redirectURI.hasPrefix("http://127.0.0.1:"))
            #expect(prompt.redirectURI.hasSuffix("/callback"))
            let url = prompt.url
            onThread { page.withLockedValue { $0 = try? fixture.browse(url).get() } }
        }
        let login = try result.get()
        #expect(login.hasRefreshToken)
        #expect(login.scope == "read")

        let query = try #require(fixture.provider.authorizeRequests.first)
        #expect(query["response_type"] == "code")
        #expect(query["client_id"] == "cli-1")
        #expect(query["scope"] == "read")
        #expect(query["code_challenge_method"] == "S256")
        #expect((query["code_challenge"] ?? "").count == 43)
        #expect((query["state"] ?? "").count >= 32)
        #expect(fixture.provider.count("authorization_code") == 1)

        let callback = try #require(eventually { page.withLockedValue { $0 } })
        #expect(callback.status == 200)
        #expect(callback.headers.first("Referrer-Policy") == "no-referrer")
        #expect(String(decoding: callback.body, as: UTF8.self).contains("Signed in"))

        let stored = try #require(try fixture.store.read().grants["app"])
        #expect(stored.accessToken == "access-1")
        #expect(stored.refreshToken == "refresh-1")

        // The running proxy picks the login up without a restart. Its provider is named
        // `svc` in the forwarding fixture, so copy the grant across as `login` would for it.
        try fixture.store.update { $0.grants["svc"] = $0.grants["app"] }
        let after = try upstream.client()
        try after.send("GET /api/protected HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try after.readResponse().status == 200)
        #expect(upstream.upstream.requests.last?.headers.first("Authorization") == "Bearer access-1")
    }

    @Test(arguments: [
        ("wrong state", "state=forged"),
        ("missing state", ""),
    ])
    func aCallbackWithoutThisLoginsStateIsRefusedAndExchangesNothing(label: String, state: String) throws {
        let fixture = try LoginFixture()
        let forged = Mutex<UpstreamResponse?>(nil)
        let result = fixture.codeLogin().run(timeout: 30) { prompt in
            let url = prompt.url
            onThread {
                // First a forged callback, then the real browser.
                let approval = try? fixture.get(url).get()
                let location = approval?.headers.first("Location") ?? ""
                let forgedURL =
                    location.replacingOccurrences(of: #"state=[^&]*"#, with: state, options: .regularExpression)
                forged.withLockedValue { $0 = try? fixture.get(forgedURL).get() }
                #expect(fixture.provider.count("authorization_code") == 0)
                _ = fixture.get(location)
            }
        }
        #expect(throws: Never.self) { try result.get() }
        let refused = try #require(forged.withLockedValue { $0 })
        #expect(refused.status == 400)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("state"))
        // Exactly one exchange: the real callback's.
        #expect(fixture.provider.count("authorization_code") == 1)
    }

    @Test func aReplayedCallbackExchangesNothingAndNoSecretIsLogged() throws {
        let logs = CapturedLogs()
        let fixture = try LoginFixture()
        fixture.provider.exchangeDelay = 0.5
        let pages = Mutex<[UpstreamResponse]>([])
        let login = AuthorizationCodeLogin(
            provider: fixture.configuration,
            fetcher: fixture.fetcher,
            store: fixture.store,
            limits: fixture.limits,
            logger: logs.logger()
        )
        let result = login.run(timeout: 30) { prompt in
            let url = prompt.url
            onThread {
                guard let approval = try? fixture.get(url).get(), let callback = approval.headers.first("Location")
                else { return }
                // The same callback twice, the second once the first code is being exchanged.
                for second in [false, true] {
                    onThread {
                        if second {
                            _ = eventually { fixture.provider.count("authorization_code") >= 1 }
                        }
                        if let page = try? fixture.get(callback).get() {
                            pages.withLockedValue { $0.append(page) }
                        }
                    }
                }
            }
        }
        _ = try result.get()
        let answered = try #require(eventually { pages.withLockedValue { $0.count == 2 ? $0 : nil } })
        #expect(answered.map(\.status).sorted() == [200, 400])
        #expect(fixture.provider.count("authorization_code") == 1)
        let code = try #require(fixture.provider.issuedCodes.first)
        for secret in [code, "access-1", "refresh-1"] {
            #expect(!logs.text.contains(secret))
        }
    }

    @Test func aReplayedCallbackIsRefusedByTheStateMachine() throws {
        var machine = AuthorizationCallbackStateMachine(state: "s1", issuer: nil, issuerRequired: false)
        let callback = [("code", "c1"), ("state", "s1")]
        #expect(machine.request(path: "/callback", parameters: callback) == .exchange("c1"))
        guard case .refuse(400, _) = machine.request(path: "/callback", parameters: callback) else {
            Issue.record("a replayed callback was not refused")
            return
        }
    }

    @Test func callbackRules() {
        func judge(_ parameters: [(String, String)], issuer: String? = "https://as", required: Bool = false)
            -> AuthorizationCallbackStateMachine.Action
        {
            var machine = AuthorizationCallbackStateMachine(state: "s1", issuer: issuer, issuerRequired: required)
            return machine.request(path: "/callback", parameters: parameters)
        }
        #expect(judge([("code", "c"), ("state", "s1"), ("iss", "https://as/")]) == .exchange("c"))
        guard case .fail = judge([("code", "c"), ("state", "s1"), ("iss", "https://evil")]) else {
            Issue.record("a foreign iss was accepted")
            return
        }
        guard case .fail = judge([("code", "c"), ("state", "s1")], required: true) else {
            Issue.record("a missing iss was accepted where the issuer always sends it")
            return
        }
        guard case .refuse = judge([("code", "c"), ("state", "s1"), ("state", "s1")]) else {
            Issue.record("a repeated state was accepted")
            return
        }
        guard case .fail(let reason) = judge([("error", "access_denied"), ("state", "s1")]) else {
            Issue.record("an error callback was not a failure")
            return
        }
        #expect(reason.contains("access_denied"))
        var machine = AuthorizationCallbackStateMachine(state: "s1", issuer: nil, issuerRequired: false)
        guard case .refuse(404, _) = machine.request(path: "/favicon.ico", parameters: []) else {
            Issue.record("another path was not refused")
            return
        }
    }

    @Test func aForeignIssuerEndsTheLoginWithoutAnExchange() throws {
        let fixture = try LoginFixture()
        fixture.provider.callbackIssuer = "https://attacker.example"
        let result = fixture.codeLogin().run(timeout: 30) { prompt in
            let url = prompt.url
            onThread { _ = fixture.browse(url) }
        }
        #expect(throws: LoginError.self) { try result.get() }
        #expect(fixture.provider.count("authorization_code") == 0)
        #expect(try fixture.store.read().grants["app"] == nil)
    }

    @Test func aRefusalAtTheAuthorizationServerIsReported() throws {
        let fixture = try LoginFixture()
        fixture.provider.authorizationError = "access_denied"
        let page = Mutex<UpstreamResponse?>(nil)
        let result = fixture.codeLogin().run(timeout: 30) { prompt in
            let url = prompt.url
            onThread { page.withLockedValue { $0 = try? fixture.browse(url).get() } }
        }
        guard case .failure(let error) = result else {
            Issue.record("the login succeeded")
            return
        }
        #expect(error.message.contains("access_denied"))
        let callback = try #require(eventually { page.withLockedValue { $0 } })
        #expect(callback.status == 400)
        #expect(String(decoding: callback.body, as: UTF8.self).contains("Login failed"))
    }

    @Test func withoutACallbackTheLoginTimesOut() throws {
        let fixture = try LoginFixture()
        // Long enough for discovery on a busy machine: the wait that times out is the browser's.
        let result = fixture.codeLogin().run(timeout: 3) { _ in }
        guard case .failure(let error) = result else {
            Issue.record("the login succeeded")
            return
        }
        #expect(error.code == .timedOut)
        #expect(error.message.contains("waiting for the browser"))
    }

    @Test func pkceVerifierAndChallenge() {
        // RFC 7636 Appendix B.
        let pkce = PKCE(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        #expect(pkce.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(PKCE().verifier.count >= 43)
        #expect(PKCE().verifier != PKCE().verifier)
    }
}
