import Foundation
import Testing

/// refresh_token, password and token_exchange against the fake authorization server.
struct MachineGrantTests {
    private func fixture(_ auth: FakeAuthorizationServer, _ provider: String) throws -> ForwardingFixture {
        try ForwardingFixture(
            provider: """
                {"token_url": "\(auth.tokenURL)", "allow_insecure_endpoints": true, "client_id": "cli", \(provider)}
                """
        )
    }

    private func get(_ fixture: ForwardingFixture) throws -> TestClient.Response {
        let client = try fixture.client()
        try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try client.readResponse()
    }

    @Test func refreshTokensRotateAndAMissingOneKeepsTheOld() throws {
        let auth = try FakeAuthorizationServer()
        auth.enqueue(
            .init(
                status: 200,
                body: #"{"access_token": "a1", "token_type": "Bearer", "expires_in": 1, "refresh_token": "r2"}"#
            ),
            .init(status: 200, body: #"{"access_token": "a2", "token_type": "Bearer", "expires_in": 1}"#),
            .init(status: 200, body: #"{"access_token": "a3", "token_type": "Bearer", "expires_in": 3600}"#)
        )
        // A lifetime inside the refresh skew is used for half of it, then refreshed.
        let fixture = try self.fixture(auth, #""grant": "refresh_token", "refresh_token": "r1""#)
        for count in 1...3 {
            #expect(eventually { (try? self.get(fixture).status) == 200 && auth.requests.count == count })
        }
        #expect(auth.requests.map { $0.form["refresh_token"] } == ["r1", "r2", "r2"])
        #expect(auth.requests.allSatisfy { $0.form["grant_type"] == "refresh_token" })
        var sent: [String?] = []
        for token in fixture.upstream.requests.map({ $0.headers.first("Authorization") }) where sent.last != token {
            sent.append(token)
        }
        #expect(sent == ["Bearer a1", "Bearer a2", "Bearer a3"])
    }

    @Test func aSecretRepeatedInTheErrorDescriptionIsRedacted() throws {
        let auth = try FakeAuthorizationServer()
        auth.enqueue(
            .init(status: 400, body: #"{"error": "invalid_request", "error_description": "bad token rt-secret-77"}"#)
        )
        let fixture = try self.fixture(auth, #""grant": "refresh_token", "refresh_token": "rt-secret-77""#)
        let response = try self.get(fixture)
        #expect(response.status == 502)
        #expect(response.bodyText.contains("bad token [redacted]"))
        #expect(!response.bodyText.contains("rt-secret-77"))
    }

    @Test func invalidGrantForgetsTheRefreshTokenAndAsksForANewOne() throws {
        let auth = try FakeAuthorizationServer()
        auth.enqueue(.init(status: 400, body: #"{"error": "invalid_grant", "error_description": "revoked"}"#))
        let fixture = try self.fixture(auth, #""grant": "refresh_token", "refresh_token": "r1""#)
        let first = try self.get(fixture)
        #expect(first.status == 401)
        #expect(first.header("X-Tokenproxy-Error") == "login_required")
        // A refresh_token provider gets a new seed from its configuration, not from a login.
        #expect(first.bodyText.contains("configure a new refresh_token for provider svc"))
        // The dead refresh token is never sent again.
        #expect(try self.get(fixture).status == 401)
        #expect(auth.requests.count == 1)
    }

    @Test func passwordGrantSendsTheUsersCredentials() throws {
        let auth = try FakeAuthorizationServer()
        setenv("TOKENPROXY_TEST_PASSWORD", "pa ss&word", 1)
        let fixture = try self.fixture(
            auth,
            #""grant": "password", "username": "alice", "password": {"env": "TOKENPROXY_TEST_PASSWORD"}, "scopes": ["s1"]"#
        )
        #expect(try self.get(fixture).status == 200)
        let form = try #require(auth.requests.first?.form)
        #expect(form["grant_type"] == "password")
        #expect(form["username"] == "alice")
        #expect(form["password"] == "pa ss&word")
        #expect(form["scope"] == "s1")
    }

    @Test func tokenExchangeRereadsTheSubjectTokenFile() throws {
        let auth = try FakeAuthorizationServer()
        auth.expiresIn = 1
        let directory = try ScriptDirectory()
        let file = directory.path("sa-token")
        try "projected-1\n".write(toFile: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)  // a secret: private
        let fixture = try self.fixture(
            auth,
            """
            "grant": "token_exchange", "subject_token": {"file": "\(file)"},
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "audience": "https://data.example", "client_auth": "none"
            """
        )
        #expect(try self.get(fixture).status == 200)
        try "projected-2\n".write(toFile: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)  // a secret: private
        // The 1 s token is used for half a second; the exchange after it reads the file again.
        #expect(eventually { (try? self.get(fixture).status) == 200 && auth.requests.count == 2 })
        let forms = auth.requests.map(\.form)
        #expect(forms.map { $0["subject_token"] } == ["projected-1", "projected-2"])
        #expect(forms.first?["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange")
        #expect(forms.first?["subject_token_type"] == "urn:ietf:params:oauth:token-type:jwt")
        #expect(forms.first?["requested_token_type"] == "urn:ietf:params:oauth:token-type:access_token")
        #expect(forms.first?["audience"] == "https://data.example")
        #expect(forms.first?["client_id"] == "cli")
        #expect(auth.requests.first?.authorization == nil)
    }
}
