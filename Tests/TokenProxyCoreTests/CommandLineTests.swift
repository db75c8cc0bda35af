import Foundation
import Synchronization
import Testing

@testable import TokenProxyCore

@Suite struct CommandLineTests {
    private func write(_ json: String, in directory: ScriptDirectory) throws -> String {
        let path = directory.path("proxy.json")
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func tokenPrintsExactlyTheToken() throws {
        let directory = try ScriptDirectory()
        let config = try self.write(
            #"""
            {"token_store": "memory", "providers": {"api": {"grant": "static", "token": {"env": "TP_TEST_TOKEN"}}},
             "routes": []}
            """#,
            in: directory
        )
        let output = try TokenProxyBinary.run(
            ["token", "api", "--config", config],
            environment: ["TP_TEST_TOKEN": "s3cr3t-v4lue"]
        )
        #expect(output.status == 0)
        #expect(output.stdout == "s3cr3t-v4lue\n")
    }

    @Test func demoHelpOffersNoConfigFileItWouldIgnore() throws {
        let help = try TokenProxyBinary.run(["demo", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--listen"))
        #expect(!help.stdout.contains("--config"))
        // Still accepted, as by every command, so scripts that pass it keep working.
        let parsed = try TokenProxyBinary.run(["demo", "--config", "/nonexistent/proxy.json", "--listen", "0.0.0.0:1"])
        #expect(parsed.status == 2)
        #expect(parsed.stderr.contains("loopback"))
    }

    @Test func tokenFailuresGoToStderrWithExitOne() throws {
        let directory = try ScriptDirectory()
        let config = try self.write(
            #"""
            {"token_store": "memory", "providers": {"app": {"grant": "authorization_code",
              "authorization_url": "https://as.example/authorize", "token_url": "https://as.example/token",
              "client_id": "c"}}, "routes": []}
            """#,
            in: directory
        )
        let output = try TokenProxyBinary.run(["token", "app", "--config", config])
        #expect(output.status == 1)
        #expect(output.stdout.isEmpty)
        #expect(output.stderr.contains("login_required"))
        #expect(output.stderr.contains("tokenproxy login app"))

        let unknown = try TokenProxyBinary.run(["token", "nope", "--config", config])
        #expect(unknown.status == 2)
        #expect(unknown.stdout.isEmpty)
    }
}

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
                    outputs.withLock { $0.append(output) }
                }
                group.leave()
            }
        }
        group.wait()
        let results = outputs.withLock { $0 }
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
