import Foundation
import Testing

@testable import TokenProxyCredentials
@testable import TokenProxySupport

/// `tokenproxy token --format raw|header|json` (`docs/guide/scripts.md`): the rendering, and
/// the real binary against a token endpoint.
struct TokenPrintFormatTests {
    private static let bearer = CredentialFormatter(header: "Authorization", format: "Bearer {token}")

    @Test func rawIsTheTokenAlone() throws {
        let text = try TokenPrintFormat.raw.render(AccessToken(value: "t-1"), formatter: Self.bearer, provider: "p")
            .get()
        #expect(text == "t-1")
    }

    @Test(arguments: [
        ("Authorization", "Bearer {token}", "Authorization: Bearer t-1"),
        ("Authorization", "token {token}", "Authorization: token t-1"),
        ("X-Api-Key", "{token}", "X-Api-Key: t-1"),
    ])
    func headerIsTheLineTheProxySends(header: String, format: String, expected: String) throws {
        let formatter = CredentialFormatter(header: header, format: format)
        let text = try TokenPrintFormat.header.render(AccessToken(value: "t-1"), formatter: formatter, provider: "p")
            .get()
        #expect(text == expected)
    }

    @Test func jsonCarriesTheTypeAndTheExpiryInRFC3339() throws {
        let now = ContinuousClock.now
        let wall = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15T08:00:00Z
        let token = AccessToken(value: "t\"1", expiresAt: now + .seconds(90))
        let text = try TokenPrintFormat.json.render(token, formatter: Self.bearer, provider: "p", now: (now, wall))
            .get()
        #expect(text == #"{"access_token":"t\"1","expires_at":"2027-01-15T08:01:30Z","token_type":"Bearer"}"#)
    }

    @Test func aDPoPBoundTokenPrintsItsSchemeAProofForTheNamedRequestAndItsThumbprint() throws {
        let key = try DPoPKey.generate(.es256)
        let token = AccessToken(value: "bound-1", binding: DPoPBinding(key: key, nonces: DPoPNonces()))
        let request = TokenPrintFormat.ProofRequest(method: "POST", url: "https://api.example/v1/items?x=1")
        let header = try TokenPrintFormat.header.render(token, formatter: Self.bearer, provider: "p", request: request)
            .get()
        let lines = header.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.first == "Authorization: DPoP bound-1")
        let proof = try #require(lines.last?.dropFirst("DPoP: ".count))
        let verified = try DPoPProofVerifier.verify(
            String(proof),
            method: "POST",
            url: "https://api.example/v1/items",
            accessToken: "bound-1"
        )
        #expect(verified.thumbprint == key.thumbprint)

        let json = try TokenPrintFormat.json.render(token, formatter: Self.bearer, provider: "p").get()
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        #expect(object?["token_type"] as? String == "DPoP")
        #expect(object?["jkt"] as? String == key.thumbprint)
        #expect(object?["dpop"] == nil)
        // A proof is for one request: without one named, the header form cannot be made.
        #expect(throws: ProxyError.self) {
            try TokenPrintFormat.header.render(token, formatter: Self.bearer, provider: "p").get()
        }
        #expect(try TokenPrintFormat.raw.render(token, formatter: Self.bearer, provider: "p").get() == "bound-1")
    }

    @Test func jsonSaysNullForWhatIsNotKnown() throws {
        let formatter = CredentialFormatter(header: "X-Api-Key", format: "{token}")
        let text = try TokenPrintFormat.json.render(AccessToken(value: "t-1"), formatter: formatter, provider: "p")
            .get()
        #expect(text == #"{"access_token":"t-1","expires_at":null,"token_type":null}"#)
    }

    /// A token a header could not carry is refused in every format, as the proxy refuses to
    /// send it: a script would put it into a header too.
    @Test(arguments: TokenPrintFormat.allCases)
    func aTokenWithAControlCharacterIsRefused(format: TokenPrintFormat) {
        let result = format.render(AccessToken(value: "t\r\nX-Evil: 1"), formatter: Self.bearer, provider: "p")
        #expect(throws: ProxyError.self) { try result.get() }
    }

    /// The real binary: each format against a token endpoint that issues `issued-N` for an
    /// hour, and a usage error for an unknown format.
    @Test func theCommandPrintsEachFormat() throws {
        let auth = try FakeAuthorizationServer()
        let directory = try ScriptDirectory()
        // The token store's directory must be the user's alone.
        #expect(chmod(directory.url.path, 0o700) == 0)
        let config = directory.path("proxy.json")
        try """
        {"token_store": {"path": "\(directory.path("tokens.json"))"},
         "providers": {"api": {"grant": "client_credentials", "token_url": "\(auth.tokenURL)",
           "client_id": "c", "client_secret": "s", "allow_insecure_endpoints": true}},
         "routes": []}
        """.write(toFile: config, atomically: true, encoding: .utf8)

        let raw = try TokenProxyBinary.run(["token", "api", "--config", config])
        #expect(raw.status == 0, "\(raw.stderr)")
        #expect(raw.stdout == "issued-1\n")
        let header = try TokenProxyBinary.run(["token", "api", "--format", "header", "--config", config])
        #expect(header.stdout == "Authorization: Bearer issued-1\n")
        let json = try TokenProxyBinary.run(["token", "api", "--format", "json", "--config", config])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        )
        #expect(object["access_token"] as? String == "issued-1")
        #expect(object["token_type"] as? String == "Bearer")
        let expiresAt = try #require(object["expires_at"] as? String)
        let expiry = try #require(ISO8601DateFormatter().date(from: expiresAt))
        // The endpoint's hour, less what has passed since: in the future, at most an hour on.
        #expect(expiry > Date() && expiry <= Date().addingTimeInterval(3600))

        let oauth1 = directory.path("oauth1.json")
        try """
        {"providers": {"o1": {"grant": "oauth1", "consumer_key": "ck", "consumer_secret": "cs",
           "token": "tk", "token_secret": "ts"}}, "routes": []}
        """.write(toFile: oauth1, atomically: true, encoding: .utf8)
        let signed = try TokenProxyBinary.run(["token", "o1", "--format", "header", "--config", oauth1])
        #expect(signed.status == 2)
        #expect(signed.stdout.isEmpty)
        #expect(signed.stderr.contains("tokenproxy sign"))

        let unknown = try TokenProxyBinary.run(["token", "api", "--format", "yaml", "--config", config])
        #expect(unknown.status == 64)
        #expect(unknown.stdout.isEmpty)
    }
}
