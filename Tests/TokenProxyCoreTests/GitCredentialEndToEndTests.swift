import Foundation
import Testing

/// `credential git` with the real git against a real smart-HTTP git server (nginx, fcgiwrap,
/// `git http-backend`) that takes only one token: git gets its password from the helper,
/// which obtains it from a token endpoint, and a refused token is erased so the next git
/// command gets a new one.
@Suite(.serialized) struct GitCredentialEndToEndTests {
    private struct Setup {
        let auth: FakeAuthorizationServer
        let server: GitHTTPServer
        let store: TokenStoreFixture
        let environment: [String: String]
        let gitOptions: [String]
        let home: String
    }

    private static func setUp(acceptedToken: String) throws -> Setup {
        let auth = try FakeAuthorizationServer()
        let server = try GitHTTPServer(acceptedToken: acceptedToken)
        let store = try TokenStoreFixture()
        let config = store.root + "/proxy.json"
        try """
        {"token_store": {"path": "\(store.storePath)"},
         "providers": {"git": {"grant": "client_credentials", "token_url": "\(auth.tokenURL)", "client_id": "c",
           "client_secret": "s", "allow_insecure_endpoints": true}},
         "routes": [{"path_prefix": "/git", "upstream": "https://127.0.0.1:\(server.port)", "provider": "git"}]}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let home = store.root + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        return Setup(
            auth: auth,
            server: server,
            store: store,
            environment: GitRunner.environment(home: home),
            gitOptions: [
                "-c", "credential.helper=!\(TokenProxyBinary.path) credential git --config \(config)",
                "-c", "http.sslCAInfo=\(server.caFile)",
            ],
            home: home
        )
    }

    @Test func cloneAndPushUseTheIssuedToken() throws {
        let setup = try Self.setUp(acceptedToken: "issued-1")
        let work = setup.home + "/clone"
        let clone = try GitRunner.run(
            setup.gitOptions + ["clone", "-q", setup.server.url, work],
            environment: setup.environment
        )
        #expect(clone.status == 0, "\(clone.stderr)")
        try "more\n".write(toFile: work + "/NEW", atomically: true, encoding: .utf8)
        for arguments in [["add", "NEW"], ["commit", "-q", "-m", "second"]] {
            try GitRunner.run(["-C", work] + arguments, environment: setup.environment).check()
        }
        let push = try GitRunner.run(
            setup.gitOptions + ["-C", work, "push", "-q", "origin", "main"],
            environment: setup.environment
        )
        #expect(push.status == 0, "\(push.stderr)")
        // The push used the stored token: one token request in all.
        #expect(setup.auth.requests.count == 1)
    }

    @Test func aRefusedTokenIsErasedAndTheNextCommandGetsANewOne() throws {
        let setup = try Self.setUp(acceptedToken: "issued-2")
        let first = try GitRunner.run(
            setup.gitOptions + ["clone", "-q", setup.server.url, setup.home + "/first"],
            environment: setup.environment
        )
        #expect(first.status != 0, "the server takes only the second token")
        let second = try GitRunner.run(
            setup.gitOptions + ["clone", "-q", setup.server.url, setup.home + "/second"],
            environment: setup.environment
        )
        #expect(second.status == 0, "\(second.stderr)")
        #expect(setup.auth.requests.count == 2)
    }
}
