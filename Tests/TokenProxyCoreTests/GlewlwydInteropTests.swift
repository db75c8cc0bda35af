import Foundation
import Testing

@testable import TokenProxyCredentials
@testable import TokenProxyForwarding
@testable import TokenProxyMetrics

/// Sender-constrained tokens against a real server: Glewlwyd demands DPoP with nonces at its
/// token endpoint and at `/userinfo` (RFC 9449 §8, §9). The route's upstream is `/userinfo`,
/// which answers only a token bound to the proof's key, with a proof of that request.
@Suite(.serialized)
struct GlewlwydInteropTests {
    final class Proxy {
        let metrics = ProxyMetrics()
        let logs = CapturedLogs()
        let proxy: TestProxy

        init(_ server: GlewlwydServer, store: (any TokenStore)? = nil, provider extra: String = "") throws {
            let json = """
                {"providers": {"glewlwyd": {"grant": "password", "issuer": "\(server.string("issuer"))",
                   "client_id": "\(server.client("dpop", "client_id"))",
                   "client_secret": "\(server.client("dpop", "client_secret"))",
                   "username": "\(server.user.name)", "password": "\(server.user.password)",
                   "scopes": ["openid", "tokenproxy.read"], "ca_file": "\(server.string("ca_file"))",
                   "dpop": {"alg": "ES256"} \(extra)}},
                 "routes": [{"name": "me", "path_prefix": "/me", "upstream": "\(server.string("userinfo_endpoint"))",
                             "provider": "glewlwyd", "ca_file": "\(server.string("ca_file"))"}]}
                """
            self.proxy = try TestProxy.forwarding(
                json,
                logger: self.logs.logger(),
                metrics: self.metrics,
                store: store
            )
        }

        func send(_ method: String = "GET", body: String = "") throws -> TestClient.Response {
            let client = try self.proxy.client()
            var head = "\(method) /me HTTP/1.1\r\nHost: localhost\r\n"
            if method != "GET" {
                head += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n"
            }
            try client.send(head + "\r\n" + body)
            return try client.readResponse()
        }

        var exposition: String { String(decoding: self.metrics.exposition(openConnections: 0), as: UTF8.self) }

        func count(_ series: String) -> Int {
            for line in self.exposition.split(separator: "\n") where line.hasPrefix(series + " ") {
                return Int(line.dropFirst(series.count + 1)) ?? -1
            }
            return 0
        }
    }

    static let tokenRequests = #"tokenproxy_token_requests_total{provider="glewlwyd",result="success"}"#
    static let tokenNonces = #"tokenproxy_dpop_nonce_retries_total{provider="glewlwyd",at="token_endpoint"}"#
    static let upstreamNonces = #"tokenproxy_dpop_nonce_retries_total{provider="glewlwyd",at="upstream"}"#

    @Test func aBoundTokenReachesUserinfoAndARestartUsesTheStoredTokenAndKey() throws {
        let server = try GlewlwydServer()
        let directory = try TokenStoreFixture()

        var first: Proxy? = try Proxy(server, store: directory.store())
        let answer = try #require(try first?.send())
        #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self)) \(first?.logs.text ?? "")")
        #expect(String(decoding: answer.body, as: UTF8.self).contains(#""sub""#))
        // The token endpoint asked for a nonce once; the same origin's nonce then served
        // /userinfo at once.
        #expect(first?.count(Self.tokenRequests) == 1)
        #expect(first?.count(Self.tokenNonces) == 1)
        #expect(try first?.send("POST", body: "claims=none").status == 200)
        first = nil

        // A new process: the stored token and its key, but no nonce yet. /userinfo asks for
        // one (401 use_dpop_nonce), and the request, body and all, is sent again with it.
        let second = try Proxy(server, store: directory.store())
        let posted = try second.send("POST", body: "claims=none&x=1")
        #expect(posted.status == 200, "\(String(decoding: posted.body, as: UTF8.self)) \(second.logs.text)")
        #expect(second.count(Self.tokenRequests) == 0)
        #expect(second.count(Self.upstreamNonces) == 1)
        #expect(try second.send().status == 200)
        #expect(second.count(Self.upstreamNonces) == 1)
        let stored = try directory.store().read().grants["glewlwyd"]
        #expect(stored?.tokenType?.lowercased() == "dpop")
        #expect(stored?.dpopKey != nil)
    }

    @Test func twentyColdRequestsMakeOneTokenRequest() throws {
        let server = try GlewlwydServer()
        let proxy = try Proxy(server)
        var clients: [TestClient] = []
        for _ in 0..<20 {
            let client = try proxy.proxy.client()
            try client.send("GET /me HTTP/1.1\r\nHost: localhost\r\n\r\n")
            clients.append(client)
        }
        let statuses = try clients.map { try $0.readResponse().status }
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(proxy.count(Self.tokenRequests) == 1)
    }

    @Test func aRotatingNonceIsFollowed() throws {
        // A new nonce after every success: each answer's DPoP-Nonce is used by the next proof.
        let server = try GlewlwydServer(nonceCounter: 1)
        let proxy = try Proxy(server)
        for _ in 0..<4 {
            let answer = try proxy.send()
            #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
        }
    }
}
