import Foundation
import Synchronization
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxyHTTP
@testable import TokenProxySupport
@testable import TokenProxyUpstream

/// What the interactive logins need in a test: a fake provider, its configuration, a
/// store, and a "browser" that follows the authorization URL to the loopback callback.
struct LoginFixture {
    let provider: FakeOAuthProvider
    let configuration: ProviderConfiguration
    let store: any TokenStore
    let fetcher = UpstreamFetcher(engine: ForwardingFixture.engine)

    init(grant: String = "authorization_code", extra: String = "", store: (any TokenStore)? = nil) throws {
        let provider = try FakeOAuthProvider()
        self.provider = provider
        let json = """
            {"providers": {"app": {"grant": "\(grant)", "issuer": "\(provider.origin)", "client_id": "cli-1",
              "scopes": ["read"], "allow_insecure_endpoints": true \(extra)}}, "routes": []}
            """
        self.configuration = try #require(TestProxy.configuration(json).providers["app"])
        self.store = store ?? MemoryTokenStore()
    }

    var limits: Limits { Limits() }

    func codeLogin() -> AuthorizationCodeLogin {
        AuthorizationCodeLogin(
            provider: self.configuration,
            fetcher: self.fetcher,
            store: self.store,
            limits: self.limits,
            logger: TestLogging.logger
        )
    }

    /// GET `url` without following redirects.
    func get(_ url: String) -> Result<UpstreamResponse, ProxyError> {
        Blocking.wait { done in
            self.fetcher.fetch(
                UpstreamFetcher.Request(method: "GET", url: url, headers: HTTPHeaders(), allowPlainHTTP: true),
                completion: done
            )
        }
    }

    /// Plays the browser: the authorization URL (which approves at once), then its redirect,
    /// optionally rewritten first. Returns the callback page.
    func browse(
        _ url: String,
        rewrite: @escaping @Sendable (String) -> String = { $0 }
    ) -> Result<UpstreamResponse, ProxyError> {
        self.get(url).flatMap { approval in
            guard approval.status == 302, let location = approval.headers.first("Location") else {
                return .failure(ProxyError(.badRequest, "the authorization endpoint did not redirect"))
            }
            return self.get(rewrite(location))
        }
    }
}
