import Foundation
import Testing

@testable import TokenProxyCredentials

/// Tokens a header cannot carry are refused when received from a command or a secret file,
/// so the next fetch, or the fixed file, succeeds.
struct BadCredentialTests {
    @Test(arguments: [
        #"printf '{"access_token": "bad\\r\\nX-Injected: 1"}'"#, #"printf '{"access_token": " padded"}'"#,
        #"printf 'bad\001token'"#, #"printf '{"access_token": "ok", "expires_in": 1e300}'"#,
        #"printf '{"access_token": "ok", "expires_in": "nan"}'"#,
        #"printf '{"access_token": "ok", "expires_in": -5}'"#,
    ])
    func aCommandsBadOutputFailsAndTheNextRunSucceeds(firstRun: String) throws {
        let scripts = try ScriptDirectory()
        let marker = scripts.path("ran-once")
        let command = try scripts.script(
            "mint",
            """
            if [ -e \(marker) ]; then printf '{"access_token": "good-token", "expires_in": 3600}'; exit 0; fi
            touch \(marker)
            \(firstRun)
            """
        )
        let source = CommandCredentialSource(
            name: "cmd",
            argv: [command],
            cacheSeconds: nil,
            refreshSkewSeconds: 0,
            timeout: 10,
            waitSeconds: 10,
            backoffSeconds: 1
        )
        guard case .failure(let error) = source.waitForToken() else {
            Issue.record("the bad output was accepted")
            return
        }
        #expect(error.code == .tokenUnavailable)
        #expect(error.message.contains("command output"), "\(error.message)")
        // The failed run is remembered for the backoff; the run after it succeeds.
        #expect(eventually { (try? source.waitForToken().get().value) == "good-token" })
    }

    @Test(arguments: ["bad\r\ntoken\n", "bad\u{0}token", "tab\ttoken", " padded", "line\nbreak"])
    func aSecretFileWithABadTokenFailsUntilItIsRewritten(content: String) throws {
        let scripts = try ScriptDirectory()
        let path = scripts.path("token")
        try content.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o600)
        let source = StaticCredentialSource(name: "static", secret: .file(path))
        guard case .failure(let error) = source.waitForToken() else {
            Issue.record("the bad token was accepted")
            return
        }
        #expect(error.code == .tokenUnavailable)
        // A different size, so the file's change is seen whatever the clock's resolution.
        try "good-token-value\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        #expect(try source.waitForToken().get().value == "good-token-value")
    }

    @Test func aStoredTokenAHeaderCannotCarryIsNotUsed() {
        let grant = StoredGrant(accessToken: "bad\r\ntoken", expiresAt: Date().addingTimeInterval(3600))
        #expect(grant.freshAccessToken(skew: 0) == nil)
        let good = StoredGrant(accessToken: "good", expiresAt: Date().addingTimeInterval(3600))
        #expect(good.freshAccessToken(skew: 0)?.value == "good")
    }

    /// Under every descriptor limit from "almost none" up, `token` for a command provider
    /// ends with an exit status, never a signal: a pipe that cannot be made is an error.
    @Test func runningOutOfDescriptorsIsAnErrorNotAStop() throws {
        let scripts = try ScriptDirectory()
        let config = try Self.commandConfig(in: scripts)
        var succeeded = false
        for limit in 4...48 {
            let result = try TokenProxyBinary.run(["token", "cmd", "--config", config], descriptorLimit: limit)
            // This test is about the credential command's pipes and process; the outbound
            // engine's start-up (its eventfd) is not part of it.
            if result.stderr.contains("eventfd") { continue }
            #expect(result.signal == nil, "limit \(limit): signal \(result.signal ?? 0): \(result.stderr)")
            #expect([0, 1, 2].contains(result.status), "limit \(limit): \(result.status): \(result.stderr)")
            succeeded = succeeded || result.status == 0
        }
        #expect(succeeded)
    }

    @Test func aCommandInheritsNoDescriptorButItsStandardStreams() throws {
        // A descriptor without close-on-exec, as a client socket or the store's lock may be.
        let open = Glibc.open("/dev/null", O_RDONLY)
        #expect(open > 2)
        defer { close(open) }
        let scripts = try ScriptDirectory()
        let command = try scripts.script("fds", "ls /proc/$$/fd | tr '\\n' ','")
        let output = try CommandRunner.run([command], timeout: 10)
        let descriptors = String(decoding: output.stdout, as: UTF8.self).split(separator: ",").compactMap { Int32($0) }
        #expect(descriptors.contains(1))
        #expect(!descriptors.contains(open), "\(descriptors)")
    }

    private static func commandConfig(in scripts: ScriptDirectory) throws -> String {
        let command = try scripts.script("mint", "echo token-from-command")
        let path = scripts.path("proxy.json")
        try """
        {"token_store": "memory", "providers": {"cmd": {"grant": "command", "command": ["\(command)"]}},
         "routes": [{"path_prefix": "/c", "upstream": "https://example.invalid", "provider": "cmd"}]}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
