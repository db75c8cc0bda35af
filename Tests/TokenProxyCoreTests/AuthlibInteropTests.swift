import Foundation
import Testing

@testable import TokenProxyForwarding
@testable import TokenProxyHTTP
@testable import TokenProxySupport
@testable import TokenProxyUpstream

/// The Authlib-based authorization server and API of `Tests/Interop/authlib_server.py`,
/// started on a free loopback port for one test.
private final class AuthlibServer {
    private let server: InteropServer

    init() throws {
        self.server = try InteropServer(script: "authlib_server.py")
    }

    var port: UInt16 { self.server.port }

    var origin: String { self.server.origin }

    func tokenRequests() throws -> Int {
        let response = try fetchOverLoopback(.init(method: "GET", url: "\(self.origin)/stats", allowPlainHTTP: true))
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return object?["token_requests"] as? Int ?? -1
    }
}

/// One request through the proxy's own fetcher, waited for.
private func fetchOverLoopback(_ request: UpstreamFetcher.Request) throws -> UpstreamResponse {
    let result = Locked<Result<UpstreamResponse, ProxyError>?>(nil)
    let done = DispatchSemaphore(value: 0)
    UpstreamFetcher(engine: ForwardingFixture.engine).fetch(request) { outcome in
        result.withLockedValue { $0 = outcome }
        done.signal()
    }
    done.wait()
    guard let outcome = result.withLockedValue({ $0 }) else { throw ProxyError(.upstreamUnreachable, "no answer") }
    return try outcome.get()
}

/// tokenproxy against a real third-party OAuth 2 server implementation (Authlib, from PyPI).
@Suite(.serialized)
struct AuthlibInteropTests {
    private func proxy(_ server: AuthlibServer, provider: String) throws -> TestProxy {
        let json = """
            {"providers": {"authlib": {"token_url": "\(server.origin)/oauth/token", "allow_insecure_endpoints": true,
                                       "client_id": "interop-client", \(provider)}},
             "routes": [{"path_prefix": "/api", "upstream": "\(server.origin)/api", "provider": "authlib",
                         "allow_insecure_upstream": true}]}
            """
        return try TestProxy.forwarding(json)
    }

    private func get(_ proxy: TestProxy) throws -> TestClient.Response {
        let client = try proxy.client()
        try client.send("GET /api/profile HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try client.readResponse()
    }

    @Test func clientCredentials() throws {
        let server = try AuthlibServer()
        let proxy = try self.proxy(
            server,
            provider: #""grant": "client_credentials", "client_secret": "interop-secret", "refresh_skew_seconds": 5"#
        )
        for _ in 0..<3 {
            let response = try self.get(proxy)
            #expect(response.status == 200)
            #expect(response.bodyText.contains(#""path":"/profile""#))
        }
        #expect(try server.tokenRequests() == 1)
    }

    @Test func clientSecretPost() throws {
        let server = try AuthlibServer()
        let proxy = try self.proxy(
            server,
            provider:
                #""grant": "client_credentials", "client_secret": "interop-secret", "client_auth": "client_secret_post""#
        )
        #expect(try self.get(proxy).status == 200)
    }

    @Test func aWrongSecretIsReportedAsInvalidClient() throws {
        let server = try AuthlibServer()
        let proxy = try self.proxy(server, provider: #""grant": "client_credentials", "client_secret": "wrong""#)
        let response = try self.get(proxy)
        #expect(response.status == 502)
        #expect(response.bodyText.contains("invalid_client"))
        #expect(try server.tokenRequests() == 1)
    }

    @Test func passwordGrant() throws {
        let server = try AuthlibServer()
        let proxy = try self.proxy(
            server,
            provider:
                #""grant": "password", "client_secret": "interop-secret", "username": "alice", "password": "wonderland""#
        )
        let response = try self.get(proxy)
        #expect(response.status == 200)
        #expect(response.bodyText.contains(#""user":"alice""#))
    }

    @Test func refreshTokensRotateAndTheOldOneIsNeverReused() throws {
        let server = try AuthlibServer()
        // A seed refresh token from a password grant, as a login would have stored.
        let seed = try Self.seedRefreshToken(server)
        // Refreshed tokens live 2 s, inside the 60 s refresh skew: each is used for half its
        // life, then refreshed, and Authlib revokes each refresh token it replaces, so reusing
        // one would fail.
        let proxy = try self.proxy(
            server,
            provider: #""grant": "refresh_token", "client_secret": "interop-secret", "refresh_token": "\#(seed)""#
        )
        for requests in 2...4 {
            #expect(
                eventually {
                    guard let response = try? self.get(proxy), response.status == 200,
                        response.bodyText.contains(#""user":"alice""#)
                    else { return false }
                    return (try? server.tokenRequests()) == requests
                },
                "token request \(requests)"
            )
        }
        #expect(try server.tokenRequests() == 4)
    }

    private static func seedRefreshToken(_ server: AuthlibServer) throws -> String {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        headers.add(
            name: "Authorization",
            value: "Basic " + Data("interop-client:interop-secret".utf8).base64EncodedString()
        )
        let response = try fetchOverLoopback(
            .init(
                method: "POST",
                url: "\(server.origin)/oauth/token",
                headers: headers,
                body: Array("grant_type=password&username=alice&password=wonderland".utf8),
                allowPlainHTTP: true
            )
        )
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return try #require(object?["refresh_token"] as? String)
    }
}
