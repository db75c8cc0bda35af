import Foundation
import Testing

@testable import TokenProxyCredentials

#if canImport(Glibc)
    import Glibc
#endif

/// A corrupt or hand-edited token store, and a store directory others control: every command
/// that reads the store ends with a message and an exit status, never a signal.
@Suite struct HostileTokenStoreTests {
    /// A config with one `client_credentials` provider `api` at `auth`, its store in `store`.
    private static func config(auth: FakeAuthorizationServer, upstream: FakeUpstream, store: TokenStoreFixture)
        throws -> String
    {
        let path = store.root + "/proxy.json"
        try """
        {"token_store": {"path": "\(store.storePath)"},
         "providers": {"api": {"grant": "client_credentials", "token_url": "\(auth.tokenURL)",
                               "allow_insecure_endpoints": true, "client_id": "c",
                               "client_secret": {"env": "TP_HOSTILE_STORE_SECRET"}}},
         "routes": [{"path_prefix": "/api", "upstream": "http://127.0.0.1:\(upstream.port)", "provider": "api",
                     "allow_insecure_upstream": true}]}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The store file with `key` of the `api` grant (or `field` at the top) set to raw JSON `value`.
    private static func edit(_ store: TokenStoreFixture, from data: Data, grantKey key: String, rawValue value: String)
        throws
    {
        var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        var grants = try #require(object["grants"] as? [String: Any])
        var grant = try #require(grants["api"] as? [String: Any])
        grant[key] = "__VALUE__"
        grants["api"] = grant
        object["grants"] = grants
        object["pending_revocations"] = [
            [
                "provider": "api", "token": "t", "token_type_hint": "access_token",
                "revocation_url": "https://127.0.0.1:1/revoke",
                "since": key == "since" ? "__VALUE__" : 0,
            ]
        ]
        let text = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
            .replacingOccurrences(of: #""__VALUE__""#, with: value)
        try store.write(Data(text.utf8))
    }

    @Test(arguments: [
        ("expires_at", "1e300"), ("expires_at", "-1e300"), ("expires_at", "1e400"),
        ("expires_at", "99999999999999999999999999"), ("expires_at", "-5"), ("expires_at", #""soon""#),
        ("expires_at", "true"), ("obtained_at", "1e300"), ("last_error_at", "-1e300"), ("since", "1e300"),
        ("access_token", #""bad\r\nX-Injected: 1""#), ("access_token", "12"), ("refresh_token", "[]"),
        ("pending_login", #"{"token": "t", "token_secret": "s", "since": 1e300}"#), ("token_secret", "7"),
    ])
    func aHandEditedStoreNeverStopsACommand(key: String, value: String) throws {
        let auth = try FakeAuthorizationServer()
        let upstream = try FakeUpstream()
        let store = try TokenStoreFixture()
        let config = try Self.config(auth: auth, upstream: upstream, store: store)
        let environment = ["TP_HOSTILE_STORE_SECRET": "hostile-store-secret"]
        let first = try TokenProxyBinary.run(["token", "api", "--config", config], environment: environment)
        #expect(first.status == 0, "\(first.stderr)")
        let original = try #require(store.bytes(), "no store after `token`: \(store.names())")
        setenv("TP_HOSTILE_STORE_SECRET", "hostile-store-secret", 1)
        for command in [["token", "api"], ["status"], ["login", "api"], ["logout", "api"], ["serve"]] {
            try Self.edit(store, from: original, grantKey: key, rawValue: value)
            let result: TokenProxyBinary.Result
            if command == ["serve"] {
                let (served, status) = try TokenProxyBinary.serve(
                    config: config,
                    request: "GET /api/x HTTP/1.1\r\nHost: localhost\r\n\r\n"
                )
                result = served
                #expect(status == 200, "serve answered \(String(describing: status)): \(served.stderr)")
            } else {
                result = try TokenProxyBinary.run(command + ["--config", config], environment: environment)
                #expect([0, 1, 2].contains(result.status), "\(command): \(result.status) \(result.stderr)")
            }
            #expect(result.signal == nil, "\(command) stopped by signal \(result.signal ?? 0): \(result.stderr)")
        }
    }

    @Test(arguments: [0o755, 0o770, 0o750, 0o701])
    func aStoreDirectoryOpenToOthersIsRefusedWithTheFix(mode: Int) throws {
        let store = try TokenStoreFixture()
        try store.store().update { $0 = TokenStoreFixture.sample }
        #expect(chmod(store.storeDirectory, mode_t(mode)) == 0)
        let error = storeError { try store.store().checkPermissions() }
        #expect(error?.code == .insecurePermissions)
        #expect(error?.message.contains("chmod 700 \(store.storeDirectory)") == true)
        let auth = try FakeAuthorizationServer()
        let config = try Self.config(auth: auth, upstream: try FakeUpstream(), store: store)
        for command in [["token", "api"], ["status"], ["serve"]] {
            let result =
                command == ["serve"]
                ? try TokenProxyBinary.serve(config: config, request: "GET /api/x HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    .0
                : try TokenProxyBinary.run(command + ["--config", config])
            #expect(result.status == 2, "\(command): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("chmod 700 \(store.storeDirectory)"), "\(result.stderr)")
        }
        #expect(chmod(store.storeDirectory, 0o700) == 0)
        try store.store().checkPermissions()
    }

    @Test(.enabled(if: geteuid() == 0, "only root can give a directory away"))
    func aStoreDirectoryOwnedByAnotherUserIsRefusedWithTheFix() throws {
        let store = try TokenStoreFixture()
        try store.store().update { $0 = TokenStoreFixture.sample }
        #expect(chown(store.storeDirectory, 65534, 65534) == 0)
        let error = storeError { try store.store().checkPermissions() }
        #expect(error?.code == .insecurePermissions)
        #expect(error?.message.contains("uid 65534") == true)
        #expect(error?.message.contains("chown \(geteuid()) \(store.storeDirectory)") == true)
        let auth = try FakeAuthorizationServer()
        let config = try Self.config(auth: auth, upstream: try FakeUpstream(), store: store)
        let result = try TokenProxyBinary.run(["status", "--config", config])
        #expect(result.status == 2)
        #expect(result.stderr.contains("chown \(geteuid()) \(store.storeDirectory)"), "\(result.stderr)")
        #expect(chown(store.storeDirectory, geteuid(), getegid()) == 0)
        try store.store().checkPermissions()
    }

    @Test func missingStoreDirectoriesAreCreatedPrivate() throws {
        let store = try TokenStoreFixture()
        try store.store().checkPermissions()
        try store.store().update { $0 = TokenStoreFixture.sample }
        #expect(store.mode(store.storeDirectory) == 0o700)
        try store.store().checkPermissions()
    }
}
