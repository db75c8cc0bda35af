import Crypto
import CryptoExtras
import Foundation
import Logging
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxyForwarding
@testable import TokenProxyMetrics
@testable import TokenProxyUpstream

/// A proxy whose route uses a `client_credentials` provider with `dpop`, in front of a
/// ``FakeDPoPServer`` that is both its token endpoint and its upstream.
final class DPoPFixture {
    let server: FakeDPoPServer
    let proxy: TestProxy
    let metrics = ProxyMetrics()
    let logs = CapturedLogs()

    init(
        dpop: String = #"{"alg": "ES256"}"#,
        store: (any TokenStore)? = nil,
        server: FakeDPoPServer? = nil,
        prepare: (FakeDPoPServer) -> Void = { _ in }
    ) throws {
        let server = try server ?? FakeDPoPServer()
        prepare(server)
        self.server = server
        let json = """
            {"providers": {"svc": {"grant": "client_credentials", "token_url": "\(server.tokenURL)",
               "allow_insecure_endpoints": true, "client_id": "proxy", "client_secret": "s3cr3t", "dpop": \(dpop)}},
             "routes": [{"name": "api", "path_prefix": "/api", "upstream": "\(server.origin)/resource",
                         "provider": "svc", "allow_insecure_upstream": true}]}
            """
        self.proxy = try TestProxy.forwarding(json, logger: self.logs.logger(), metrics: self.metrics, store: store)
    }

    func send(_ method: String = "GET", _ path: String = "/api/items?page=2", body: [UInt8] = [], headers: String = "")
        throws -> TestClient.Response
    {
        let client = try self.proxy.client()
        let length = method == "GET" ? "" : "Content-Length: \(body.count)\r\n"
        try client.send("\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n\(length)\(headers)\r\n")
        if !body.isEmpty {
            try client.send(body)
        }
        return try client.readResponse()
    }

    var exposition: String { String(decoding: self.metrics.exposition(openConnections: 0), as: UTF8.self) }
}

struct DPoPTests {
    @Test func theTokenAndEachRequestCarryAProofAndEachNonceIsAnsweredOnce() throws {
        let fixture = try DPoPFixture()
        let answer = try fixture.send()
        #expect(answer.status == 200, "\(fixture.server.requests.map { ($0.path, $0.status, $0.problem) })")

        // The token endpoint asked for a nonce once; the second request carried it.
        let tokens = fixture.server.tokenRequests
        #expect(tokens.map(\.status) == [400, 200])
        #expect(tokens.map(\.nonce) == [nil, "nonce-t1"])
        #expect(tokens.allSatisfy { $0.problem == nil })
        // The upstream too: the same token, a new proof with the nonce.
        let resources = fixture.server.resourceRequests
        #expect(resources.map(\.status) == [401, 200])
        #expect(resources.map(\.authorization) == ["DPoP dpop-token-1", "DPoP dpop-token-1"])
        #expect(resources.map(\.nonce) == ["nonce-t1", "nonce-r1"])
        // Every proof is signed by one key, the one the token is bound to.
        #expect(Set(fixture.server.requests.compactMap(\.thumbprint)).count == 1)

        // The nonce is remembered: the next request goes through at once.
        #expect(try fixture.send().status == 200)
        #expect(fixture.server.resourceRequests.count == 3)
        #expect(fixture.server.tokenRequests.count == 2)

        // A new nonce is asked for and answered once more, without a new token.
        fixture.server.rotateNonce()
        #expect(try fixture.send().status == 200)
        #expect(fixture.server.resourceRequests.suffix(2).map(\.status) == [401, 200])
        #expect(fixture.server.tokenRequests.count == 2)

        #expect(fixture.exposition.contains(#"tokenproxy_dpop_proofs_total{provider="svc"} 7"#))
        #expect(
            fixture.exposition.contains(#"tokenproxy_dpop_nonce_retries_total{provider="svc",at="token_endpoint"} 1"#)
        )
        #expect(fixture.exposition.contains(#"tokenproxy_dpop_nonce_retries_total{provider="svc",at="upstream"} 2"#))
        #expect(fixture.exposition.contains(#"tokenproxy_replays_total"#) == false)
        #expect(fixture.exposition.contains(#"tokenproxy_token_requests_total{provider="svc",result="success"} 1"#))
    }

    /// joserfc (from PyPI) checks every proof the proxy sent, so the proxy's own verifier is
    /// not the only judge: signature, claims, nonce and the key's thumbprint.
    @Test(arguments: DPoPAlgorithm.allCases)
    func anIndependentVerifierAcceptsEveryProof(_ algorithm: DPoPAlgorithm) throws {
        let fixture = try DPoPFixture(dpop: #"{"alg": "\#(algorithm.rawValue)"}"#)
        #expect(try fixture.send().status == 200)
        #expect(try fixture.send("POST", "/api/items?x=1", body: Array("a=1".utf8)).status == 200)
        let server = fixture.server
        let items: [[String: Any]] = server.requests.compactMap { seen in
            guard let proof = seen.proof, let thumbprint = seen.thumbprint else { return nil }
            let token = seen.path == "/token" ? nil : seen.authorization.map { String($0.dropFirst("DPoP ".count)) }
            return [
                "proof": proof, "method": seen.method, "url": server.origin + seen.path,
                "access_token": token as Any, "nonce": seen.nonce as Any, "jkt": thumbprint,
            ]
        }
        #expect(items.count == server.requests.count)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("proofs-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try JSONSerialization.data(withJSONObject: items).write(to: file)
        let script = ProjectPython.packageRoot.appendingPathComponent("Tests/Interop/dpop_check.py").path
        let output = try CommandRunner.run([ProjectPython.executable, script, file.path], timeout: 60)
        let text = String(decoding: output.stdout, as: UTF8.self)
        let result = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        #expect(result?["checked"] as? Int == items.count, "\(text) \(output.stderr)")
        #expect((result?["errors"] as? [String])?.isEmpty == true, "\(text)")
    }

    @Test func aBodyIsSentAgainWithTheNonce() throws {
        let fixture = try DPoPFixture()
        let body = Array("{\"name\": \"widget\", \"size\": 3}".utf8)
        let answer = try fixture.send("POST", "/api/items", body: body, headers: "Content-Type: application/json\r\n")
        #expect(answer.status == 200)
        let resources = fixture.server.resourceRequests
        #expect(resources.map(\.status) == [401, 200])
        let digest = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        #expect(resources.map(\.bodySHA256) == [digest, digest])
        #expect(resources.allSatisfy { $0.method == "POST" && $0.problem == nil })
    }

    @Test func theClientsOwnProofAndCredentialAreReplaced() throws {
        let fixture = try DPoPFixture { $0.nonceAtResource = false }
        let answer = try fixture.send(headers: "Authorization: DPoP stolen\r\nDPoP: eyJ.forged.proof\r\n")
        #expect(answer.status == 200)
        let seen = try #require(fixture.server.resourceRequests.first)
        #expect(seen.authorization == "DPoP dpop-token-1")
        #expect(seen.problem == nil)
    }

    @Test func twentyColdRequestsShareOneToken() throws {
        let fixture = try DPoPFixture { $0.tokenDelay = 0.3 }
        var clients: [TestClient] = []
        for index in 0..<20 {
            let client = try fixture.proxy.client()
            try client.send("GET /api/items/\(index) HTTP/1.1\r\nHost: localhost\r\n\r\n")
            clients.append(client)
        }
        let statuses = try clients.map { try $0.readResponse().status }
        #expect(statuses.allSatisfy { $0 == 200 })
        // One token request: its nonce retry and its answer.
        #expect(fixture.server.tokenRequests.map(\.status) == [400, 200])
        #expect(fixture.server.resourceRequests.allSatisfy { $0.problem == nil })
    }

    /// A file store and a server without nonces at the resource, after a first proxy on them
    /// made one request (200) and went away.
    private func afterAFirstProxy() throws -> (TokenStoreFixture, FakeDPoPServer) {
        let directory = try TokenStoreFixture()
        let server = try FakeDPoPServer()
        server.nonceAtResource = false
        let first = try DPoPFixture(store: directory.store(), server: server)
        #expect(try first.send().status == 200)
        return (directory, server)
    }

    @Test func aRestartUsesTheStoredTokenAndKey() throws {
        let (directory, server) = try self.afterAFirstProxy()
        let second = try DPoPFixture(store: directory.store(), server: server)
        #expect(try second.send().status == 200)
        #expect(server.tokenRequests.filter { $0.status == 200 }.count == 1)
        #expect(server.resourceRequests.map(\.status) == [200, 200])
        #expect(Set(server.requests.compactMap(\.thumbprint)).count == 1)
        // The key is in the store beside the token, never in a log line.
        let stored = try directory.store().read().grants["svc"]
        #expect(stored?.dpopKey?.contains("PRIVATE KEY") == true)
        #expect(stored?.tokenType == "DPoP")
        #expect(!second.logs.text.contains("PRIVATE KEY"))
    }

    /// A record whose tokens are bound to a key it no longer holds (rewritten by an older
    /// binary, edited by hand) is not used with a new key: new tokens are obtained.
    @Test func tokensWhoseKeyWasLostAreNotUsed() throws {
        let (directory, server) = try self.afterAFirstProxy()
        try directory.store().update { $0.grants["svc"]?.dpopKey = nil }
        let second = try DPoPFixture(store: directory.store(), server: server)
        #expect(try second.send().status == 200)
        #expect(server.tokenRequests.filter { $0.status == 200 }.count == 2)
        #expect(server.resourceRequests.allSatisfy { $0.status == 200 && $0.problem == nil })
    }

    @Test func aBearerAnswerIsUsedAsABearerTokenWithAWarning() throws {
        let fixture = try DPoPFixture { $0.issuesBearer = true }
        _ = try fixture.send()
        _ = try fixture.send()
        let seen = fixture.server.resourceRequests
        #expect(seen.first?.authorization == "Bearer dpop-token-1")
        #expect(seen.allSatisfy { $0.proof == nil })
        let warnings = fixture.logs.events.filter { $0.message.contains("ignored the DPoP proof") }
        #expect(warnings.count == 1)
    }

    @Test(arguments: DPoPAlgorithm.allCases)
    func everyAlgorithmSignsProofsAServerAccepts(_ algorithm: DPoPAlgorithm) throws {
        let fixture = try DPoPFixture(dpop: #"{"alg": "\#(algorithm.rawValue)"}"#)
        #expect(try fixture.send().status == 200)
        #expect(fixture.server.requests.allSatisfy { $0.problem == nil })
        let proof = try #require(fixture.server.resourceRequests.last?.proof)
        let header = try #require(
            DPoPProofVerifier.decode(proof.split(separator: ".")[0]).flatMap {
                try JSONSerialization.jsonObject(with: $0) as? [String: Any]
            }
        )
        #expect(header["alg"] as? String == algorithm.rawValue)
    }

    @Test(arguments: DPoPAlgorithm.allCases)
    func aConfiguredKeyIsUsedAndItsThumbprintIsTheBinding(_ algorithm: DPoPAlgorithm) throws {
        let pem: String
        switch algorithm {
        case .es256: pem = P256.Signing.PrivateKey().pemRepresentation
        case .rs256, .ps256: pem = try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation
        case .edDSA: pem = Curve25519.Signing.PrivateKey().pemRepresentation
        }
        let key = try DPoPKey(pem: pem, algorithm: algorithm)
        let escaped = pem.replacingOccurrences(of: "\n", with: "\\n")
        let fixture = try DPoPFixture(dpop: #"{"alg": "\#(algorithm.rawValue)", "key": "\#(escaped)"}"#)
        #expect(try fixture.send().status == 200)
        #expect(Set(fixture.server.requests.compactMap(\.thumbprint)) == [key.thumbprint])
        #expect(!"\(key)".contains("PRIVATE"))
    }

    @Test func aKeyOfTheWrongKindIsRefusedWithoutShowingIt() throws {
        let pem = P256.Signing.PrivateKey().pemRepresentation
        #expect(throws: DPoPKey.Failure.self) { try DPoPKey(pem: pem, algorithm: .edDSA) }
        do {
            _ = try DPoPKey(pem: pem, algorithm: .rs256)
        } catch {
            #expect(!error.description.contains("BEGIN"))
        }
    }
}

/// What the `dpop` key accepts, and what it does not allow with it.
struct DPoPConfigurationTests {
    static func problems(_ provider: String) -> String {
        let json = #"{"providers": {"p": \#(provider)}, "routes": []}"#
        do {
            _ = try ProxyConfiguration.decode(Data(json.utf8))
            return ""
        } catch {
            return "\(error)"
        }
    }

    static let base =
        #""grant": "client_credentials", "token_url": "https://as.example/token", "client_id": "c", "client_secret": "s""#

    @Test func everyAlgorithmAndNoneDecode() throws {
        for alg in DPoPAlgorithm.allCases {
            #expect(Self.problems(#"{\#(Self.base), "dpop": {"alg": "\#(alg.rawValue)"}}"#).isEmpty)
        }
        #expect(Self.problems(#"{\#(Self.base), "dpop": {}}"#).isEmpty)
    }

    @Test func anUnknownAlgorithmOrKeyIsAProblem() {
        #expect(Self.problems(#"{\#(Self.base), "dpop": {"alg": "HS256"}}"#).contains("dpop.alg: must be one of"))
        #expect(Self.problems(#"{\#(Self.base), "dpop": {"algo": "ES256"}}"#).contains("algo"))
        #expect(Self.problems(#"{\#(Self.base), "dpop": "ES256"}"#).contains("dpop"))
    }

    @Test func theHeaderAndFormatCannotBeChanged() {
        #expect(Self.problems(#"{\#(Self.base), "dpop": {}, "header": "X-Token"}"#).contains("header"))
        #expect(Self.problems(#"{\#(Self.base), "dpop": {}, "format": "Token {token}"}"#).contains("format"))
        #expect(Self.problems(#"{\#(Self.base), "dpop": {}, "token_request_headers": {"DPoP": "x"}}"#).contains("DPoP"))
    }

    @Test func aLiteralKeyMustBePEM() {
        #expect(Self.problems(#"{\#(Self.base), "dpop": {"key": "/etc/keys/dpop.pem"}}"#).contains("dpop.key"))
        #expect(Self.problems(#"{\#(Self.base), "dpop": {"key": {"file": "/etc/keys/dpop.pem"}}}"#).isEmpty)
    }

    @Test func onlyTokenEndpointGrantsTakeIt() {
        #expect(Self.problems(#"{"grant": "static", "token": "t", "dpop": {}}"#).contains("dpop"))
    }
}

/// `WWW-Authenticate` values that do and do not ask for a DPoP nonce (RFC 9449 §9).
struct DPoPChallengeTests {
    @Test(arguments: [
        (#"DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof""#, true),
        (#"DPoP algs="ES256", error="use_dpop_nonce""#, true),
        (#"dpop error=use_dpop_nonce"#, true),
        (#"Bearer realm="x", DPoP error="use_dpop_nonce""#, true),
        (#"DPoP error="invalid_token""#, false),
        (#"Bearer error="use_dpop_nonce""#, false),
        (#"DPoP error_description="error=\"use_dpop_nonce\"""#, false),
        (#"DPoP realm="a, error=use_dpop_nonce""#, false),
        (#"DPoP realm="x", error = "use_dpop_nonce""#, true),
        (#"Basic realm="x", error="use_dpop_nonce""#, false),
        ("", false),
    ])
    func readsTheChallenge(_ value: String, _ asks: Bool) {
        #expect(DPoPChallenge.asksForNonce([value]) == asks)
    }

    @Test func aNonceMustBeNQChars() {
        let nonces = DPoPNonces()
        #expect(nonces.record("abc-123_XYZ", from: "https://a.example/x"))
        #expect(!nonces.record("has space", from: "https://a.example/x"))
        #expect(!nonces.record("quote\"", from: "https://a.example/x"))
        #expect(!nonces.record("", from: "https://a.example/x"))
        #expect(!nonces.record(String(repeating: "n", count: 2000), from: "https://a.example/x"))
        #expect(nonces.nonce(for: "https://A.example/other?q=1") == "abc-123_XYZ")
        #expect(nonces.nonce(for: "https://b.example/x") == nil)
    }

    @Test func theHTUHasNoQueryOrFragment() {
        #expect(DPoPURL.htu("https://api.example/a/b?x=1#f") == "https://api.example/a/b")
        #expect(DPoPURL.htu("https://api.example/a#f?x") == "https://api.example/a")
        #expect(DPoPURL.origin("https://API.example:8443/a?b") == "https://api.example:8443")
        // RFC 9449 §4.3 compares htu after RFC 3986 normalisation: scheme and host in lower
        // case, no default port.
        #expect(DPoPURL.htu("HTTPS://AS.Example:443/Token?x") == "https://as.example/Token")
        #expect(DPoPURL.htu("http://as.example:80/t") == "http://as.example/t")
        // Not URLs (what `tokenproxy token --url` may be given): kept as they are, no crash.
        #expect(DPoPURL.htu("a?b:c") == "a")
        #expect(DPoPURL.htu("DPoP x=\"?\" p:443") == "DPoP x=\"")
        #expect(DPoPURL.htu("no-scheme/x:1") == "no-scheme/x:1")
        #expect(DPoPURL.htu("") == "")
        #expect(DPoPURL.htu("https://as.example:8443/t") == "https://as.example:8443/t")
        #expect(DPoPURL.origin("https://as.example:443/t") == DPoPURL.origin("https://AS.example/x"))
    }

    @Test func nonceMemoryIsBounded() {
        let nonces = DPoPNonces()
        for index in 0..<(DPoPNonces.capacity + 10) {
            nonces.record("n\(index)", from: "https://host\(index).example/")
        }
        #expect(nonces.nonce(for: "https://host0.example/") == nil)
        #expect(nonces.nonce(for: "https://host\(DPoPNonces.capacity + 9).example/") == "n\(DPoPNonces.capacity + 9)")
    }
}
