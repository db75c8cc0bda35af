import CryptoExtras
import Foundation
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyForwarding

/// Requests signed by the proxy for an `oauth1` provider, checked by a real verifier:
/// oauthlib's ResourceEndpoint (PyPI), in `Tests/Interop/oauthlib_resource.py`.
@Suite(.serialized)
struct OAuth1InteropTests {
    private static let consumerKey = "tokenproxyconsumer0001"
    private static let consumerSecret = "consumer secret & more ~"
    private static let token = "tokenproxyaccesstoken0001"
    private static let tokenSecret = "token/secret+1"

    /// The verifier, the proxy in front of it with `method`, and the directory with the keys;
    /// the verifier checks with `verifierSecret` as the consumer secret.
    private func setUp(
        _ method: OAuth1SignatureMethod,
        verifierSecret: String = Self.consumerSecret
    ) throws -> (InteropServer, TestProxy, ScriptDirectory) {
        let directory = try ScriptDirectory()
        let (publicKey, privateKey) = try directory.rsaKeyPair()
        let server = try InteropServer(
            script: "oauthlib_resource.py",
            arguments: [Self.consumerKey, verifierSecret, Self.token, Self.tokenSecret, publicKey]
        )
        let secret = method == .rsaSHA1 ? #"{"file": "\#(privateKey)"}"# : #""\#(Self.consumerSecret)""#
        let json = """
            {"providers": {"legacy": {"grant": "oauth1", "consumer_key": "\(Self.consumerKey)",
                                      "consumer_secret": \(secret), "token": "\(Self.token)",
                                      "token_secret": "\(Self.tokenSecret)", "signature_method": "\(method.rawValue)",
                                      "realm": "test"}},
             "routes": [{"path_prefix": "/api", "upstream": "\(server.origin)/base", "provider": "legacy",
                         "allow_insecure_upstream": true}]}
            """
        let proxy = try TestProxy.forwarding(json)
        return (server, proxy, directory)
    }

    private func verified(_ response: TestClient.Response) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return try #require(object)
    }

    @Test(arguments: OAuth1SignatureMethod.allCases)
    func aGetWithAQueryIsAccepted(method: OAuth1SignatureMethod) throws {
        let (server, proxy, directory) = try self.setUp(method)
        defer { withExtendedLifetime((server, directory)) {} }
        let client = try proxy.client()
        for round in 0..<2 {
            // The same request twice: each needs a fresh nonce, which the verifier checks.
            try client.send(
                "GET /api/photos?file=vacation%20x.jpg&size=original&a=%2B&b=r%C3%A9 HTTP/1.1\r\nHost: localhost\r\n\r\n"
            )
            let response = try client.readResponse()
            #expect(response.status == 200, "round \(round): \(response.bodyText)")
            let answer = try self.verified(response)
            #expect(answer["valid"] as? Bool == true)
            #expect(answer["method"] as? String == method.rawValue)
        }
    }

    @Test(arguments: OAuth1SignatureMethod.allCases)
    func aPostWithAFormBodyIsSignedWithItsParameters(method: OAuth1SignatureMethod) throws {
        let (server, proxy, directory) = try self.setUp(method)
        defer { withExtendedLifetime((server, directory)) {} }
        let client = try proxy.client()
        let body = "status=Hello+Ladies+%2B+Gentlemen%2C+a+signed+OAuth+request%21&include_entities=true&x=1&x=0"
        try client.send(
            "POST /api/statuses/update.json?include=ext HTTP/1.1\r\nHost: localhost\r\n"
                + "Content-Type: application/x-www-form-urlencoded; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
                + body
        )
        let response = try client.readResponse()
        #expect(response.status == 200, "\(response.bodyText)")
        let answer = try self.verified(response)
        let params = (answer["params"] as? [[String]])?.map { $0.joined(separator: "=") } ?? []
        // The verifier saw the form parameters as signed ones.
        #expect(params.contains("status=Hello Ladies + Gentlemen, a signed OAuth request!"))
        #expect(params.contains("include=ext"))
    }

    /// A form body longer than the replay buffer cannot be held to be signed: 413.
    @Test func aFormBodyOverTheReplayBufferIsRefused() throws {
        let (server, proxy, directory) = try self.setUp(.hmacSHA1)
        defer { withExtendedLifetime((server, directory)) {} }
        let client = try proxy.client()
        let body = String(repeating: "a=b&", count: 300_000)
        try client.send(
            "POST /api/x HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n"
        )
        try? client.send(body)
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response.header("X-Tokenproxy-Error") == "body_too_large")
    }

    /// A signature the verifier refuses (a wrong secret) comes back as its 401.
    @Test func aWrongSecretIsRefusedByTheVerifier() throws {
        let (server, proxy, directory) = try self.setUp(.hmacSHA1, verifierSecret: "another secret")
        defer { withExtendedLifetime((server, directory)) {} }
        #expect(try proxy.client().get("/api/x").status == 401)
    }
}
