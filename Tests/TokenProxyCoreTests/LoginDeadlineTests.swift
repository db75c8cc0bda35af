import Foundation
import Synchronization
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxySupport
@testable import TokenProxyUpstream

#if canImport(Glibc)
    import Glibc
#endif

/// Every wait of `login` and `logout` has an end: a provider that stalls (no answer, or a
/// head then silence) fails the login at its `--timeout` naming the step, a stalled
/// revocation endpoint still lets the logout delete the tokens, and idle connections to the
/// loopback listener do not keep the browser's callback out.
@Suite struct LoginDeadlineTests {
    /// Runs `body` on a thread of its own and returns its value, or nil when it did not
    /// return within a generous bound (which only keeps a broken build from hanging the run).
    private func returns<Value: Sendable>(_ body: @escaping @Sendable () -> Value) -> Value? {
        let done = DispatchSemaphore(value: 0)
        let value = Mutex<Value?>(nil)
        Thread.detachNewThread {
            let result = body()
            value.withLockedValue { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + 120) == .success else { return nil }
        return value.withLockedValue { $0 }
    }

    /// A provider named `app` from the JSON of its settings.
    private func provider(_ settings: String) throws -> ProviderConfiguration {
        let json = #"{"providers": {"app": {\#(settings), "allow_insecure_endpoints": true}}, "routes": []}"#
        return try #require(TestProxy.configuration(json).providers["app"])
    }

    /// An OAuth 1.0a provider whose three URLs are on `endpoint`.
    private func oauth1Provider(_ endpoint: LoginStallingEndpoint) throws -> ProviderConfiguration {
        try self.provider(
            """
            "grant": "oauth1", "consumer_key": "ck", "consumer_secret": "cs",
            "request_token_url": "\(endpoint.origin)/request_token", "authorize_url": "\(endpoint.origin)/authorize",
            "access_token_url": "\(endpoint.origin)/access_token"
            """
        )
    }

    private func oauth1Login(_ provider: ProviderConfiguration, store: any TokenStore) -> OAuth1Login {
        OAuth1Login(
            provider: provider,
            fetcher: UpstreamFetcher(engine: ForwardingFixture.engine),
            store: store,
            limits: Limits(),
            logger: TestLogging.logger
        )
    }

    /// `count` TCP connections to 127.0.0.1:`port` that send nothing.
    private func idleConnections(_ count: Int, to port: UInt16) -> [Int32] {
        (0..<count).compactMap { _ in
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { return nil }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            guard connected else {
                close(descriptor)
                return nil
            }
            return descriptor
        }
    }

    /// The port of a loopback callback URI.
    private func port(of uri: String) -> UInt16 {
        let authority = uri.dropFirst("http://127.0.0.1:".count).prefix { $0 != "/" }
        return UInt16(authority) ?? 0
    }

    @Test func aRequestTokenEndpointThatSendsItsHeadThenNothingFailsTheLoginAtItsTimeout() throws {
        let endpoint = try LoginStallingEndpoint { _ in .headThenSilence }
        let login = self.oauth1Login(try self.oauth1Provider(endpoint), store: MemoryTokenStore())
        let result = try #require(self.returns { login.run(timeout: 2) { _ in } })
        guard case .failure(let error) = result else {
            Issue.record("the login succeeded")
            return
        }
        #expect(error.code == .timedOut)
        #expect(error.message.contains("request_token_url"))
        #expect(endpoint.paths == ["/request_token"])
    }

    @Test func anOutOfBandLoginEndsWhileWaitingForTheVerifier() throws {
        let endpoint = try LoginStallingEndpoint { _ in
            .answer(
                status: 200,
                contentType: "text/plain",
                body: "oauth_token=t1&oauth_token_secret=s1&oauth_callback_confirmed=true"
            )
        }
        let store = MemoryTokenStore()
        let login = self.oauth1Login(try self.oauth1Provider(endpoint), store: store)
        let never = DispatchSemaphore(value: 0)
        let result = try #require(
            self.returns {
                login.runOutOfBand(timeout: 2) { _ in
                } verifier: {
                    never.wait()
                    return nil
                }
            }
        )
        never.signal()
        guard case .failure(let error) = result else {
            Issue.record("the login did not time out")
            return
        }
        #expect(error.code == .timedOut)
        #expect(error.message.contains("verifier"))
        // The login stays waiting for `--verifier`.
        #expect(try store.read().grants["app"]?.pendingLogin != nil)
    }

    @Test func aTokenEndpointThatNeverAnswersAPollFailsTheDeviceLoginAtItsTimeout() throws {
        let endpoint = try LoginStallingEndpoint { path in
            guard path == "/device" else { return .silence }
            return .answer(
                status: 200,
                contentType: "application/json",
                body: #"{"device_code": "dc", "user_code": "UC", "verification_uri": "http://x/v", "interval": 1}"#
            )
        }
        let provider = try self.provider(
            """
            "grant": "device_code", "client_id": "c", "token_url": "\(endpoint.origin)/token",
            "device_authorization_url": "\(endpoint.origin)/device"
            """
        )
        let login = DeviceCodeLogin(
            provider: provider,
            fetcher: UpstreamFetcher(engine: ForwardingFixture.engine),
            store: MemoryTokenStore(),
            limits: Limits(),
            sleep: { _ in }
        )
        let result = try #require(self.returns { login.run(timeout: 2) { _ in } })
        guard case .failure(let error) = result else {
            Issue.record("the login succeeded")
            return
        }
        #expect(error.code == .timedOut)
        #expect(error.message.contains("polling the token endpoint"))
        #expect(endpoint.paths.contains("/token"))
    }

    @Test func discoveryThatNeverAnswersFailsTheLoginAtItsTimeout() throws {
        let endpoint = try LoginStallingEndpoint { _ in .silence }
        let login = AuthorizationCodeLogin(
            provider: try self.provider(
                #""grant": "authorization_code", "issuer": "\#(endpoint.origin)", "client_id": "c""#
            ),
            fetcher: UpstreamFetcher(engine: ForwardingFixture.engine),
            store: MemoryTokenStore(),
            limits: Limits(),
            logger: TestLogging.logger
        )
        let result = try #require(self.returns { login.run(timeout: 2) { _ in } })
        guard case .failure(let error) = result else {
            Issue.record("the login succeeded")
            return
        }
        #expect(error.code == .timedOut)
        #expect(error.message.contains("discovering"))
    }

    @Test func idleConnectionsToTheListenerDoNotKeepTheOAuth1CallbackOut() throws {
        let endpoint = try LoginStallingEndpoint { path in
            let body =
                path == "/request_token"
                ? "oauth_token=t1&oauth_token_secret=s1&oauth_callback_confirmed=true"
                : "oauth_token=a1&oauth_token_secret=b1"
            return .answer(status: 200, contentType: "application/x-www-form-urlencoded", body: body)
        }
        let store = MemoryTokenStore()
        let login = self.oauth1Login(try self.oauth1Provider(endpoint), store: store)
        let idle = Mutex<[Int32]>([])
        let page = Mutex<Result<UpstreamResponse, ProxyError>?>(nil)
        let result = try #require(
            self.returns {
                login.run(timeout: 30) { prompt in
                    idle.withLockedValue { $0 = self.idleConnections(40, to: self.port(of: prompt.callback)) }
                    let callback = prompt.callback + "?oauth_token=t1&oauth_verifier=v1"
                    Thread.detachNewThread {
                        let answer = Blocking.wait { done in
                            UpstreamFetcher(engine: ForwardingFixture.engine).fetch(
                                UpstreamFetcher.Request(method: "GET", url: callback, allowPlainHTTP: true),
                                completion: done
                            )
                        }
                        page.withLockedValue { $0 = answer }
                    }
                }
            }
        )
        defer { idle.withLockedValue { $0.forEach { close($0) } } }
        #expect(idle.withLockedValue { $0.count } == 40)
        #expect(throws: Never.self) { try result.get() }
        let callback = try #require(eventually { page.withLockedValue { $0 } })
        #expect(try callback.get().status == 200)
        #expect(try store.read().grants["app"]?.accessToken == "a1")
    }

    @Test func idleConnectionsToTheListenerDoNotKeepTheCodeCallbackOut() throws {
        let fixture = try LoginFixture()
        let idle = Mutex<[Int32]>([])
        let page = Mutex<Result<UpstreamResponse, ProxyError>?>(nil)
        let login = fixture.codeLogin()
        let result = try #require(
            self.returns {
                login.run(timeout: 30) { prompt in
                    idle.withLockedValue { $0 = self.idleConnections(40, to: self.port(of: prompt.redirectURI)) }
                    let url = prompt.url
                    Thread.detachNewThread {
                        let answer = fixture.browse(url)
                        page.withLockedValue { $0 = answer }
                    }
                }
            }
        )
        defer { idle.withLockedValue { $0.forEach { close($0) } } }
        #expect(throws: Never.self) { try result.get() }
        let callback = try #require(eventually { page.withLockedValue { $0 } })
        #expect(try callback.get().status == 200)
    }

    @Test func aRevocationEndpointThatNeverAnswersStillLetsTheLogoutDeleteTheTokens() throws {
        let endpoint = try LoginStallingEndpoint { _ in .silence }
        let provider = try self.provider(
            """
            "grant": "device_code", "client_id": "c", "token_url": "\(endpoint.origin)/token",
            "device_authorization_url": "\(endpoint.origin)/device", "revocation_url": "\(endpoint.origin)/revoke"
            """
        )
        let store = MemoryTokenStore()
        try store.update {
            $0.grants["app"] = StoredGrant(
                accessToken: "a",
                refreshToken: "r",
                configFingerprint: provider.tokenFingerprint()
            )
        }
        var limits = Limits()
        limits.tokenRequestSeconds = 1
        let logout = Logout(
            provider: provider,
            fetcher: UpstreamFetcher(engine: ForwardingFixture.engine),
            store: store,
            limits: limits
        )
        let result = try #require(self.returns { logout.run() })
        let report = try result.get()
        #expect(report.hadTokens)
        #expect(report.revoked.isEmpty)
        #expect(report.pending.count == 2)
        let contents = try store.read()
        #expect(contents.grants["app"] == nil)
        #expect(Set(contents.pendingRevocations.map(\.tokenTypeHint)) == ["refresh_token", "access_token"])
    }
}
