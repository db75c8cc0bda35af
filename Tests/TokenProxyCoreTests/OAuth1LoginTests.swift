import CryptoExtras
import Foundation
import Synchronization
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxyForwarding
@testable import TokenProxySupport
@testable import TokenProxyUpstream

/// The three-legged OAuth 1.0a login (RFC 5849 §2) against a real provider: oauthlib's
/// request-token, authorization and access-token endpoints (PyPI), in
/// `Tests/Interop/oauthlib_provider.py`, which also checks the proxy's signed requests with
/// the token it issued.
@Suite(.serialized)
struct OAuth1LoginTests {
    private static let consumerKey = "tokenproxyconsumer0001"
    private static let consumerSecret = "consumer secret & more ~"

    /// The provider, its configuration with a store encrypted under a key file, and the
    /// directory holding the keys and the store.
    private struct Setup {
        let server: InteropServer
        let directory: ScriptDirectory
        let configuration: ProxyConfiguration
        let fetcher = UpstreamFetcher(engine: ForwardingFixture.engine)

        var provider: ProviderConfiguration {
            get throws { try #require(self.configuration.providers["legacy"]) }
        }

        var storePath: String { self.directory.path("store/tokens.json") }

        var store: any TokenStore { self.configuration.tokenStore.makeStore() }

        func login() throws -> OAuth1Login {
            OAuth1Login(
                provider: try self.provider,
                fetcher: self.fetcher,
                store: self.store,
                limits: self.configuration.limits,
                logger: TestLogging.logger
            )
        }

        /// The proxy, forwarding `/api` to the provider's protected resources.
        func proxy() throws -> TestProxy {
            try TestProxy(
                self.configuration,
                forwarder: CurlForwarder(
                    configuration: self.configuration,
                    engine: ForwardingFixture.engine,
                    logger: TestLogging.logger
                )
            )
        }

        /// The person's browser.
        var browser: PersonBrowser { PersonBrowser(fetcher: self.fetcher) }

        /// What the provider issued, from its `/_state`.
        func state() throws -> [String: Any] {
            let body = try self.browser.get(self.server.origin + "/_state").body
            return try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        }

        /// How many access tokens the provider issued.
        func accessTokensIssued() throws -> Int? {
            try self.state()["access_tokens"] as? Int
        }

        /// `tokenproxy logout` for the provider, as a report.
        func logout() throws -> Logout.Report {
            try Logout(
                provider: try self.provider,
                fetcher: self.fetcher,
                store: self.store,
                limits: self.configuration.limits
            ).run().get()
        }

        /// Runs a callback login to its end, the browser played on a thread of its own.
        func signIn() throws -> LoginResult {
            let browser = self.browser
            return try self.login().run(timeout: 30) { prompt in
                let url = prompt.url
                Thread.detachNewThread { _ = try? browser.browse(url) }
            }.get()
        }
    }

    /// Plays the person: follows the authorization URL as a browser does. Sendable, for the
    /// thread that plays it while the login waits.
    private struct PersonBrowser: Sendable {
        let fetcher: UpstreamFetcher

        /// GET `url` without following redirects.
        func get(_ url: String) throws -> UpstreamResponse {
            try Blocking.wait { done in
                self.fetcher.fetch(
                    UpstreamFetcher.Request(method: "GET", url: url, allowPlainHTTP: true),
                    completion: done
                )
            }.get()
        }

        /// Approves at the authorization URL, then follows its redirect to the callback.
        func browse(_ url: String) throws -> UpstreamResponse {
            let approval = try self.get(url)
            guard approval.status == 302, let location = approval.headers.first("Location") else {
                throw TestFailure(message: "the authorization endpoint answered \(approval.status)")
            }
            return try self.get(location)
        }
    }

    private func setUp(_ method: OAuth1SignatureMethod = .hmacSHA1, fault: String? = nil) throws -> Setup {
        let directory = try ScriptDirectory()
        let (publicKey, privateKey) = try directory.rsaKeyPair()
        let storeKey = try directory.secretFile("store.key", SecureRandom.hex(32))
        let server = try InteropServer(
            script: "oauthlib_provider.py",
            arguments: [Self.consumerKey, Self.consumerSecret, publicKey] + (fault.map { [$0] } ?? [])
        )
        let secret =
            method == .rsaSHA1
            ? #""private_key": {"file": "\#(privateKey)"}"# : #""consumer_secret": "\#(Self.consumerSecret)""#
        let json = """
            {"token_store": {"path": "\(directory.path("store/tokens.json"))", "encryption_key": {"file": "\(storeKey)"}},
             "providers": {"legacy": {"grant": "oauth1", "consumer_key": "\(Self.consumerKey)", \(secret),
                                      "signature_method": "\(method.rawValue)", "allow_insecure_endpoints": true,
                                      "request_token_url": "\(server.origin)/request_token",
                                      "authorize_url": "\(server.origin)/authorize",
                                      "access_token_url": "\(server.origin)/access_token"}},
             "routes": [{"path_prefix": "/api", "upstream": "\(server.origin)/resource", "provider": "legacy",
                         "allow_insecure_upstream": true}]}
            """
        try json.write(toFile: directory.path("proxy.json"), atomically: true, encoding: .utf8)
        return Setup(server: server, directory: directory, configuration: TestProxy.configuration(json))
    }

    @Test(arguments: OAuth1SignatureMethod.allCases)
    func theCallbackLoginStoresTheEncryptedPairAndTheProxySignsWithIt(method: OAuth1SignatureMethod) throws {
        let setup = try self.setUp(method)
        let proxy = try setup.proxy()
        let before = try proxy.client().get("/api/photos")
        #expect(before.status == 401)
        #expect(before.header("X-Tokenproxy-Error") == "login_required")

        let page = Mutex<UpstreamResponse?>(nil)
        let result = try setup.login().run(timeout: 30) { prompt in
            #expect(prompt.callback.hasPrefix("http://127.0.0.1:"))
            #expect(prompt.callback.hasSuffix("/callback"))
            #expect(prompt.url.hasPrefix(setup.server.origin + "/authorize?oauth_token="))
            let url = prompt.url
            let browser = setup.browser
            Thread.detachNewThread { page.withLockedValue { $0 = try? browser.browse(url) } }
        }
        #expect(throws: Never.self) { try result.get() }
        let callback = try #require(eventually { page.withLockedValue { $0 } })
        #expect(callback.status == 200)
        #expect(String(decoding: callback.body, as: UTF8.self).contains("Signed in"))

        // Stored encrypted: neither the token nor its secret is readable in the file.
        let grant = try #require(try setup.store.read().grants["legacy"])
        let token = try #require(grant.accessToken)
        let tokenSecret = try #require(grant.tokenSecret)
        #expect(grant.pendingLogin == nil)
        let file = try String(contentsOfFile: setup.storePath, encoding: .utf8)
        #expect(!file.contains(token))
        #expect(!file.contains(tokenSecret))

        // The running proxy picks the login up without a restart, and the provider accepts
        // its signature with the issued token.
        let accepted = eventually { (try? proxy.client().get("/api/photos?size=original"))?.status == 200 }
        #expect(accepted)
        #expect(try setup.accessTokensIssued() == 1)

        // `sign` shows the stored token; `logout` deletes the pair.
        let signed = try OAuth1Diagnostics.sign(
            provider: setup.provider,
            store: setup.store,
            method: "GET",
            url: "https://example.com/",
            form: nil,
            showSignature: false
        ).get()
        #expect(signed.header.contains("oauth_token=\"\(OAuth1Signer.encode(token))\""))
        let report = try setup.logout()
        #expect(report.hadTokens)
        #expect(try setup.store.read().grants["legacy"] == nil)
    }

    /// A running proxy follows the store: a logout stops its requests, and the next login's
    /// token is the one it signs with.
    @Test func aRunningProxyFollowsALogoutAndTheNextLogin() throws {
        let setup = try self.setUp()
        let proxy = try setup.proxy()
        _ = try setup.signIn()
        #expect(eventually { (try? proxy.client().get("/api/x"))?.status == 200 })
        let first = try #require(try setup.store.read().grants["legacy"]?.accessToken)
        #expect(try setup.state()["last_resource_token"] as? String == first)

        _ = try setup.logout()
        #expect(
            eventually {
                (try? proxy.client().get("/api/x"))?.header("X-Tokenproxy-Error") == "login_required"
            }
        )

        _ = try setup.signIn()
        let second = try #require(try setup.store.read().grants["legacy"]?.accessToken)
        #expect(second != first)
        #expect(eventually { (try? proxy.client().get("/api/x"))?.status == 200 })
        #expect(try setup.state()["last_resource_token"] as? String == second)
    }

    /// A stored token the provider refuses (`token_rejected`) is not used again, the store
    /// says a login is needed, and the next login's token is used.
    @Test func aRefusedStoredTokenNeedsALoginAndTheNextOneIsUsed() throws {
        let setup = try self.setUp()
        let proxy = try setup.proxy()
        _ = try setup.signIn()
        #expect(eventually { (try? proxy.client().get("/api/x"))?.status == 200 })

        var revoke = UpstreamFetcher.Request(
            method: "POST",
            url: setup.server.origin + "/_revoke",
            allowPlainHTTP: true
        )
        revoke.body = []
        _ = try Blocking.wait { done in setup.fetcher.fetch(revoke, completion: done) }.get()
        let refused = try proxy.client().get("/api/x")
        #expect(refused.status == 401)
        #expect(refused.header("X-Tokenproxy-Error") == "login_required")
        #expect(refused.bodyText.contains("oauth_problem=token_rejected"))
        #expect(refused.bodyText.contains("tokenproxy login legacy"))
        #expect(eventually { (try? setup.store.read().grants["legacy"]?.needsLogin) == true })
        let status = ProviderStatus.all(setup.configuration, contents: try setup.store.read())
        #expect(status.first?.loginRequired == true)
        let before = try setup.state()["resource_requests"] as? Int
        #expect(try proxy.client().get("/api/x").status == 401)
        // The refused token was not sent again.
        #expect(try setup.state()["resource_requests"] as? Int == before)

        _ = try setup.signIn()
        #expect(eventually { (try? proxy.client().get("/api/x"))?.status == 200 })
    }

    /// A damaged store (a date out of range in a waiting login) is moved aside, not trusted.
    @Test func aDamagedWaitingLoginIsNotTrusted() throws {
        let setup = try self.setUp()
        try setup.store.update { contents in
            contents.grants["legacy"] = StoredGrant(
                pendingLogin: PendingOAuth1Login(
                    token: "t",
                    tokenSecret: "s",
                    since: Date(timeIntervalSince1970: 1e300)
                ),
                configFingerprint: try? setup.provider.tokenFingerprint()
            )
        }
        guard case .failure(let error) = try setup.login().finish(verifier: "v", timeout: 30) else {
            Issue.record("a damaged waiting login was finished")
            return
        }
        #expect(error.message.contains("no out-of-band login is waiting") || error.code == .store, "\(error)")
    }

    /// A request naming another temporary token may be a forgery from another page: refused,
    /// and the login goes on to the real callback.
    @Test func aCallbackForAnotherTokenIsRefusedAndTheLoginWaitsForItsOwn() throws {
        let setup = try self.setUp()
        let forged = Mutex<Int?>(nil)
        let result = try setup.login().run(timeout: 30) { prompt in
            let url = prompt.url
            let callback = prompt.callback
            let browser = setup.browser
            Thread.detachNewThread {
                let status = try? browser.get(callback + "?oauth_token=forged&oauth_verifier=forged").status
                forged.withLockedValue { $0 = status }
                _ = try? browser.browse(url)
            }
        }
        #expect(throws: Never.self) { try result.get() }
        #expect(forged.withLockedValue { $0 } == 400)
        #expect(try setup.accessTokensIssued() == 1)
    }

    /// Without `oauth_callback_confirmed=true` the provider may not have bound the callback
    /// to the token: the login stops before anyone is sent to approve.
    @Test func anUnconfirmedCallbackEndsTheLoginBeforeTheBrowser() throws {
        let setup = try self.setUp(fault: "unconfirmed")
        let presented = Mutex(false)
        let result = try setup.login().run(timeout: 30) { _ in presented.withLockedValue { $0 = true } }
        guard case .failure(let error) = result else {
            Issue.record("the login succeeded")
            return
        }
        #expect(error.code == .exchangeFailed)
        #expect(error.message.contains("oauth_callback_confirmed"))
        #expect(!presented.withLockedValue { $0 })
        #expect(try setup.store.read().grants["legacy"] == nil)
    }

    /// A refused exchange names the provider's `oauth_problem` and nothing else it said.
    @Test func aRefusedExchangeNamesTheProblemAndNoSecret() throws {
        let setup = try self.setUp(fault: "refuse_access")
        let page = Mutex<UpstreamResponse?>(nil)
        let result = try setup.login().run(timeout: 30) { prompt in
            let url = prompt.url
            let browser = setup.browser
            Thread.detachNewThread { page.withLockedValue { $0 = try? browser.browse(url) } }
        }
        guard case .failure(let error) = result else {
            Issue.record("the login succeeded")
            return
        }
        #expect(error.code == .exchangeFailed)
        #expect(error.message.contains("oauth_problem=permission_denied"))
        #expect(!error.message.contains("consumer secret"))
        #expect(try #require(eventually { page.withLockedValue { $0 } }).status == 502)
        #expect(try setup.store.read().grants["legacy"] == nil)
    }

    /// Out of band in two steps: the first keeps the temporary credentials in the store, the
    /// second exchanges the verifier the provider showed; a second use finds nothing waiting.
    @Test func theOutOfBandLoginFinishesWithTheVerifierLater() throws {
        let setup = try self.setUp()
        let shown = Mutex<String?>(nil)
        let first = try setup.login().runOutOfBand(timeout: 30) { prompt in
            #expect(prompt.callback == "oob")
            shown.withLockedValue { $0 = prompt.url }
        } verifier: {
            nil
        }
        #expect(try first.get() == nil)
        #expect(try setup.store.read().grants["legacy"]?.pendingLogin != nil)

        let page = try setup.browser.get(try #require(shown.withLockedValue { $0 }))
        #expect(page.status == 200)
        let verifier = try #require(
            FormEncoding.decode(String(decoding: page.body, as: UTF8.self))?.first { $0.0 == "oauth_verifier" }?.1
        )
        _ = try setup.login().finish(verifier: verifier + "\n", timeout: 30).get()
        let grant = try #require(try setup.store.read().grants["legacy"])
        #expect(grant.accessToken != nil && grant.tokenSecret != nil)
        #expect(grant.pendingLogin == nil)
        #expect(try setup.accessTokensIssued() == 1)

        guard case .failure(let again) = try setup.login().finish(verifier: verifier, timeout: 30) else {
            Issue.record("a spent verifier was exchanged again")
            return
        }
        #expect(again.message.contains("no out-of-band login is waiting"))
    }

    /// A logout deletes an out-of-band login still waiting for its verifier.
    @Test func aLogoutDeletesAWaitingLogin() throws {
        let setup = try self.setUp()
        _ = try setup.login().runOutOfBand(timeout: 30) { _ in
        } verifier: {
            nil
        }.get()
        #expect(try setup.store.read().grants["legacy"]?.pendingLogin != nil)
        let report = try setup.logout()
        #expect(!report.hadTokens)
        #expect(report.hadWaitingLogin)
        #expect(try setup.store.read().grants["legacy"] == nil)
    }

    /// Out of band in one step: the verifier is read at once.
    @Test func theOutOfBandLoginTakesTheVerifierAtOnce() throws {
        let setup = try self.setUp(.hmacSHA256)
        let shown = Mutex<String?>(nil)
        let browser = setup.browser
        let result = try setup.login().runOutOfBand(timeout: 30) { prompt in
            shown.withLockedValue { $0 = prompt.url }
        } verifier: {
            guard let url = shown.withLockedValue({ $0 }), let page = try? browser.get(url) else { return nil }
            let pairs = FormEncoding.decode(String(decoding: page.body, as: UTF8.self))
            return pairs?.first { $0.0 == "oauth_verifier" }?.1
        }
        #expect(try result.get() != nil)
        let proxy = try setup.proxy()
        #expect(try proxy.client().get("/api/x").status == 200)
    }

    /// The commands as a person runs them: `login --oob` without a verifier on standard
    /// input, `login --verifier`, `status`, `sign` and `logout`.
    @Test func theCommandsRunTheOutOfBandLoginInTwoStepsAndLogOut() throws {
        let setup = try self.setUp()
        let config = setup.directory.path("proxy.json")
        let started = try TokenProxyBinary.run(["login", "legacy", "--oob", "--config", config])
        #expect(started.status == 0, "\(started.stderr)")
        #expect(started.stderr.contains("--verifier"))
        let url = try #require(
            started.stderr.split(whereSeparator: \.isWhitespace).first {
                $0.hasPrefix(setup.server.origin + "/authorize?")
            }
        )
        let page = try setup.browser.get(String(url))
        let verifier = try #require(
            FormEncoding.decode(String(decoding: page.body, as: UTF8.self))?.first { $0.0 == "oauth_verifier" }?.1
        )
        let finished = try TokenProxyBinary.run(["login", "legacy", "--verifier", verifier, "--config", config])
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(finished.stderr.contains("Signed in to legacy"))

        let status = try TokenProxyBinary.run(["status", "--config", config])
        let line = try #require(status.stdout.split(separator: "\n").first { $0.hasPrefix("legacy") })
        #expect(line.contains("oauth1") && line.contains("access") && !line.contains("login required"))
        let signed = try TokenProxyBinary.run(["sign", "legacy", "GET", "https://example.com/", "--config", config])
        #expect(signed.status == 0, "\(signed.stderr)")
        #expect(signed.stdout.contains("oauth_token="))

        let logout = try TokenProxyBinary.run(["logout", "legacy", "--config", config])
        #expect(logout.status == 0, "\(logout.stderr)")
        #expect(logout.stderr.contains("OAuth 1.0a has no revocation"))
        let after = try TokenProxyBinary.run(["status", "--config", config])
        #expect(
            after.stdout.split(separator: "\n").first { $0.hasPrefix("legacy") }?.contains("login required") == true
        )
    }

    /// `tokenproxy login` itself, with the loopback callback: the URL on standard error, the
    /// browser's approval, exit 0 and the pair in the store.
    @Test func theCommandSignsInThroughTheLoopbackCallback() throws {
        let setup = try self.setUp()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TokenProxyBinary.path)
        process.arguments = [
            "login", "legacy", "--no-browser", "--timeout", "30", "--config", setup.directory.path("proxy.json"),
        ]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        let stream = ProcessErrorStream(errors)
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let url = try #require(
            eventually {
                stream.raw.split(whereSeparator: \.isWhitespace).first {
                    $0.hasPrefix(setup.server.origin + "/authorize?")
                }
            }
        )
        #expect(stream.raw.contains("Waiting for the browser to return to http://127.0.0.1:"))
        let page = try setup.browser.browse(String(url))
        #expect(page.status == 200)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(stream.raw)")
        #expect(stream.raw.contains("Signed in to legacy"))
        let grant = try #require(try setup.store.read().grants["legacy"])
        #expect(grant.accessToken != nil && grant.tokenSecret != nil)
    }

    @Test func callbackRules() {
        func judge(_ parameters: [(String, String)], path: String = "/callback") -> OAuth1CallbackStateMachine.Action {
            var machine = OAuth1CallbackStateMachine(token: "T1")
            return machine.request(path: path, parameters: parameters)
        }
        #expect(judge([("oauth_token", "T1"), ("oauth_verifier", "V")]) == .exchange("V"))
        #expect(
            judge([("oauth_token", "T1"), ("oauth_verifier", "V")], path: "/")
                == .refuse(status: 404, reason: "This address only receives the login callback.")
        )
        if case .refuse(let status, _) = judge([("oauth_token", "T2"), ("oauth_verifier", "V")]) {
            #expect(status == 400)
        } else {
            Issue.record("a foreign token was not refused")
        }
        if case .refuse = judge([("oauth_token", "T1"), ("oauth_token", "T1"), ("oauth_verifier", "V")]) {
        } else {
            Issue.record("a repeated oauth_token was not refused")
        }
        #expect(judge([("denied", "T1")]) == .fail("the provider reports that access was denied"))
        #expect(
            judge([("oauth_token", "T1"), ("oauth_problem", "user_refused")])
                == .fail("the provider reports oauth_problem=user_refused")
        )
        #expect(judge([("oauth_token", "T1")]) == .fail("the callback carries no oauth_verifier"))

        var machine = OAuth1CallbackStateMachine(token: "T1")
        #expect(
            machine.request(path: "/callback", parameters: [("oauth_token", "T1"), ("oauth_verifier", "V")])
                == .exchange("V")
        )
        if case .refuse = machine.request(
            path: "/callback",
            parameters: [("oauth_token", "T1"), ("oauth_verifier", "V")]
        ) {
        } else {
            Issue.record("a second callback was not refused")
        }
    }
}
