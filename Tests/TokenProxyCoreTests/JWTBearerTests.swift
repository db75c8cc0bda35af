import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import TokenProxyCredentials
@testable import TokenProxySupport

/// Checks a compact JWS the way an authorization server would: signature, then claims.
private struct AssertionCheck {
    var header: [String: Any]
    var claims: [String: Any]

    init?(_ jwt: String, rsa: _RSA.Signing.PublicKey? = nil, ec: P256.Signing.PublicKey? = nil) {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]),
            let claimsData = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else { return nil }
        let digest = SHA256.hash(data: Data("\(parts[0]).\(parts[1])".utf8))
        if let rsa {
            guard
                rsa.isValidSignature(
                    _RSA.Signing.RSASignature(rawRepresentation: signature),
                    for: digest,
                    padding: .insecurePKCS1v1_5
                )
            else { return nil }
        } else if let ec {
            guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
                ec.isValidSignature(signature, for: digest)
            else { return nil }
        } else {
            return nil
        }
        self.header = header
        self.claims = claims
    }
}

struct JWTBearerTests {
    private func fixture(_ auth: FakeAuthorizationServer, _ provider: String) throws -> ForwardingFixture {
        try ForwardingFixture(
            provider: """
                {"token_url": "\(auth.tokenURL)", "allow_insecure_endpoints": true, \(provider)}
                """
        )
    }

    private func get(_ fixture: ForwardingFixture) throws -> Int {
        let client = try fixture.client()
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try client.readResponse().status
    }

    @Test func es256AssertionsAreSignedWithTheRightClaims() throws {
        let auth = try FakeAuthorizationServer()
        let key = P256.Signing.PrivateKey()
        let files = try ScriptDirectory()
        let keyFile = files.path("key.pem")
        try key.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        chmod(keyFile, 0o600)
        let fixture = try self.fixture(
            auth,
            """
            "grant": "jwt_bearer", "key": {"file": "\(keyFile)"}, "alg": "ES256", "issuer_claim": "svc@example",
            "subject": "user@example", "audience": "https://auth.example/token", "scopes": ["a", "b"]
            """
        )
        #expect(try self.get(fixture) == 200)
        let form = try #require(auth.requests.first?.form)
        #expect(form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        #expect(form["scope"] == "a b")
        #expect(form["audience"] == nil)
        let check = try #require(AssertionCheck(form["assertion"] ?? "", ec: key.publicKey))
        #expect(check.header["alg"] as? String == "ES256")
        #expect(check.claims["iss"] as? String == "svc@example")
        #expect(check.claims["sub"] as? String == "user@example")
        #expect(check.claims["aud"] as? String == "https://auth.example/token")
        let issuedAt = try #require(check.claims["iat"] as? Int)
        let expires = try #require(check.claims["exp"] as? Int)
        #expect(expires > issuedAt)
        #expect(abs(issuedAt - Int(Date().timeIntervalSince1970)) < 600)
        #expect(check.claims["jti"] is String)
    }

    @Test func aGoogleServiceAccountKeyFileSignsRS256() throws {
        let auth = try FakeAuthorizationServer()
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let files = try ScriptDirectory()
        let keyFile = files.path("sa.json")
        let json: [String: String] = [
            "type": "service_account", "client_email": "robot@project.iam.example",
            "private_key": key.pemRepresentation,
            "private_key_id": "kid-1", "token_uri": auth.tokenURL,
        ]
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: keyFile))
        chmod(keyFile, 0o600)
        let fixture = try ForwardingFixture(
            provider: """
                {"grant": "jwt_bearer", "service_account_file": "\(keyFile)", "allow_insecure_endpoints": true,
                 "scopes": ["https://www.googleapis.com/auth/cloud-platform"]}
                """
        )
        #expect(try self.get(fixture) == 200)
        let form = try #require(auth.requests.first?.form)
        let check = try #require(AssertionCheck(form["assertion"] ?? "", rsa: key.publicKey))
        #expect(check.header["alg"] as? String == "RS256")
        #expect(check.header["kid"] as? String == "kid-1")
        #expect(check.claims["iss"] as? String == "robot@project.iam.example")
        #expect(check.claims["aud"] as? String == auth.tokenURL)
        #expect(check.claims["scope"] as? String == "https://www.googleapis.com/auth/cloud-platform")
    }

    @Test func aWrongKeyIsRejectedByTheCheck() throws {
        let signer = try JWTSigner(pem: P256.Signing.PrivateKey().pemRepresentation, algorithm: .es256)
        let jwt = try signer.sign(["iss": "x"])
        #expect(AssertionCheck(jwt, ec: P256.Signing.PrivateKey().publicKey) == nil)
    }

    @Test func privateKeyJWTAuthenticatesTheClient() throws {
        let auth = try FakeAuthorizationServer()
        let key = P256.Signing.PrivateKey()
        let files = try ScriptDirectory()
        let keyFile = files.path("client.pem")
        try key.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        chmod(keyFile, 0o600)
        let fixture = try self.fixture(
            auth,
            #""grant": "client_credentials", "client_id": "cid", "client_assertion_key": {"file": "\#(keyFile)"}, "alg": "ES256""#
        )
        #expect(try self.get(fixture) == 200)
        let seen = try #require(auth.requests.first)
        #expect(seen.authorization == nil)
        #expect(seen.form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        let check = try #require(AssertionCheck(seen.form["client_assertion"] ?? "", ec: key.publicKey))
        #expect(check.claims["iss"] as? String == "cid")
        #expect(check.claims["sub"] as? String == "cid")
        #expect(check.claims["aud"] as? String == auth.tokenURL)
    }
}
