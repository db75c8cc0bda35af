import Foundation
import Synchronization
import Testing
import TokenProxySupport

@testable import TokenProxyCredentials

/// The credential commands against a fake provider, with a token store file shared by
/// separate processes.
@Suite struct CredentialCommandTests {
    private func setUp(key: String? = nil) throws -> (FakeOAuthProvider, TokenStoreFixture, String) {
        let provider = try FakeOAuthProvider()
        provider.acceptRefreshToken("seed-1")
        let fixture = try TokenStoreFixture()
        let encryption = key == nil ? "" : #", "encryption_key": {"env": "TP_STORE_KEY"}"#
        let json = """
            {"token_store": {"path": "\(fixture.storePath)"\(encryption)},
             "providers": {"app": {"grant": "refresh_token", "token_url": "\(provider.origin)/token", "client_id": "c",
               "refresh_token": {"env": "TP_SEED"}, "allow_insecure_endpoints": true}},
             "routes": []}
            """
        let config = fixture.root + "/proxy.json"
        try json.write(toFile: config, atomically: true, encoding: .utf8)
        return (provider, fixture, config)
    }

    /// `token` and `status` print their answer and real errors only; the configuration's
    /// warnings (here: no routes) are for `check` and `serve`.
    @Test func tokenAndStatusLeaveTheWarningsToCheck() throws {
        let (provider, fixture, config) = try self.setUp()
        defer { withExtendedLifetime((provider, fixture)) {} }
        let environment = ["TP_SEED": "seed-1"]
        let token = try TokenProxyBinary.run(["token", "--config", config, "app"], environment: environment)
        #expect(token.status == 0, "\(token.stderr)")
        #expect(token.stderr.isEmpty, "\(token.stderr)")
        let status = try TokenProxyBinary.run(["status", "--config", config], environment: environment)
        #expect(!status.stderr.contains("warning:"), "\(status.stderr)")
        let check = try TokenProxyBinary.run(["check", "--config", config], environment: environment)
        #expect(check.stderr.contains("warning: routes: no routes"), "\(check.stderr)")
    }

    @Test func twoProcessesAskingAtOnceRefreshOnce() throws {
        let (provider, fixture, config) = try self.setUp()
        provider.refreshDelay = 0.5
        let outputs = Mutex<[TokenProxyBinary.Result]>([])
        let group = DispatchGroup()
        for _ in 0..<2 {
            group.enter()
            Thread.detachNewThread {
                if let output = try? TokenProxyBinary.run(
                    ["token", "app", "--config", config],
                    environment: ["TP_SEED": "seed-1"]
                ) {
                    outputs.withLockedValue { $0.append(output) }
                }
                group.leave()
            }
        }
        group.wait()
        let results = outputs.withLockedValue { $0 }
        #expect(results.count == 2)
        #expect(results.map(\.status) == [0, 0])
        #expect(results.map(\.stdout) == ["access-1\n", "access-1\n"])
        #expect(provider.count("refresh_token") == 1)
        #expect(try fixture.store().read().grants["app"]?.refreshToken == "refresh-1")
    }

    @Test func statusShowsStateButNeverAToken() throws {
        let (provider, fixture, config) = try self.setUp()
        defer { withExtendedLifetime((provider, fixture)) {} }
        let token = try TokenProxyBinary.run(["token", "app", "--config", config], environment: ["TP_SEED": "seed-1"])
        #expect(token.stdout == "access-1\n", "\(token.stderr)")
        let status = try TokenProxyBinary.run(["status", "--config", config], environment: ["TP_SEED": "seed-1"])
        #expect(status.status == 0)
        #expect(status.stdout.contains("app"))
        #expect(status.stdout.contains("refresh_token"))
        #expect(status.stdout.contains("access+refresh"))
        for secret in ["access-1", "refresh-1", "seed-1"] {
            #expect(!status.stdout.contains(secret))
            #expect(!status.stderr.contains(secret))
        }
    }

    @Test func anEncryptedStoreWorksWithItsKeyAndAWrongKeyIsAClearError() throws {
        let (provider, fixture, config) = try self.setUp(key: "k1")
        defer { withExtendedLifetime(provider) {} }
        let first = try TokenProxyBinary.run(
            ["token", "app", "--config", config],
            environment: ["TP_SEED": "seed-1", "TP_STORE_KEY": "correct horse battery staple 1"]
        )
        #expect(first.stdout == "access-1\n")
        #expect(!fixture.text().contains("access-1"))
        #expect(!fixture.text().contains("refresh-1"))

        let again = try TokenProxyBinary.run(
            ["token", "app", "--config", config],
            environment: ["TP_SEED": "seed-1", "TP_STORE_KEY": "correct horse battery staple 1"]
        )
        #expect(again.stdout == "access-1\n")

        let before = fixture.bytes()
        let wrong = try TokenProxyBinary.run(
            ["token", "app", "--config", config],
            environment: ["TP_SEED": "seed-1", "TP_STORE_KEY": "another key"]
        )
        #expect(wrong.status == 2)
        #expect(wrong.stdout.isEmpty)
        #expect(wrong.stderr.contains("cannot be decrypted"))
        #expect(fixture.bytes() == before)
    }

    @Test func aStoreOpenToOthersIsRefusedWithTheFix() throws {
        let (provider, fixture, config) = try self.setUp()
        defer { withExtendedLifetime(provider) {} }
        try fixture.write(Data(#"{"version": 1, "grants": {}}"#.utf8), mode: 0o644)
        let output = try TokenProxyBinary.run(["token", "app", "--config", config], environment: ["TP_SEED": "seed-1"])
        #expect(output.status == 2)
        #expect(output.stderr.contains("chmod 600 \(fixture.storePath)"))
    }
}
