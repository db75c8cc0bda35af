import Foundation
import Synchronization
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxySupport
@testable import TokenProxyUpstream

/// A temporary directory with small executable scripts for `command` providers.
final class ScriptDirectory {
    let url: URL

    init() throws {
        self.url = FileManager.default.temporaryDirectory.appendingPathComponent("tp-cmd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.url, withIntermediateDirectories: true)
    }

    /// Writes an executable `/bin/sh` script and returns its path.
    func script(_ name: String, _ body: String) throws -> String {
        let path = self.url.appendingPathComponent(name).path
        try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o700)
        return path
    }

    func path(_ name: String) -> String {
        self.url.appendingPathComponent(name).path
    }

    deinit {
        try? FileManager.default.removeItem(at: self.url)
    }
}

private func fetch(_ source: any CredentialSource) -> Result<AccessToken, ProxyError> {
    source.waitForToken()
}

/// A `command` source named `cmd` running `command`, with the test's cache and timeout.
private func commandSource(
    _ command: String,
    cacheSeconds: Double? = nil,
    refreshSkewSeconds: Double = 0,
    timeout: Double = 10
) -> CommandCredentialSource {
    CommandCredentialSource(
        name: "cmd",
        argv: [command],
        cacheSeconds: cacheSeconds,
        refreshSkewSeconds: refreshSkewSeconds,
        timeout: timeout,
        waitSeconds: timeout + 10
    )
}

struct CredentialSourceTests {
    @Test func theAccessLineTellsWhenACommandRanForTheRequest() throws {
        let logs = CapturedLogs()
        let scripts = try ScriptDirectory()
        let mint = try scripts.script("mint", "echo minted-token-1")
        let fixture = try ForwardingFixture(
            provider: #"{"grant": "command", "command": ["\#(mint)"], "cache_seconds": 600}"#,
            logger: logs.logger()
        )
        for _ in 0..<2 {
            let client = try fixture.client()
            try client.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
        let lines = try #require(eventually { AccessLines.of(logs, count: 2) })
        #expect(lines[0]["token_refreshed"] == "true")
        #expect(lines[1]["token_refreshed"] == nil, "the cached output was used")
        #expect(!logs.text.contains("minted-token-1"))
    }

    @Test func aCommandPrintingABareTokenIsUsed() throws {
        let scripts = try ScriptDirectory()
        let command = try scripts.script("token", "printf 'plain-token-1\\n'")
        let source = commandSource(command)
        #expect(try fetch(source).get().value == "plain-token-1")
    }

    @Test func aCommandPrintingJSONGivesTheTokenAndItsExpiry() throws {
        let scripts = try ScriptDirectory()
        let command = try scripts.script("token", #"echo '{"access_token": "json-token", "expires_in": 3600}'"#)
        let source = commandSource(command)
        let token = try fetch(source).get()
        #expect(token.value == "json-token")
        #expect(token.expiresAt != nil)
    }

    @Test func concurrentRequestsShareOneRunAndTheResultIsCached() throws {
        let scripts = try ScriptDirectory()
        let counter = scripts.path("runs")
        let command = try scripts.script("token", "echo run >> '\(counter)'\nsleep 0.3\necho shared-token")
        let source = commandSource(command, cacheSeconds: 300)
        let group = DispatchGroup()
        let values = Locked<[String]>([])
        for _ in 0..<20 {
            group.enter()
            source.token { result in
                if case .success(let token) = result { values.withLockedValue { $0.append(token.value) } }
                group.leave()
            }
        }
        group.wait()
        #expect(values.withLockedValue { $0 } == Array(repeating: "shared-token", count: 20))
        #expect(try fetch(source).get().value == "shared-token")
        let runs = try String(contentsOfFile: counter, encoding: .utf8).split(separator: "\n").count
        #expect(runs == 1)
    }

    @Test func aLifetimeShorterThanTheSkewIsUsedForHalfOfItThenTheCommandRunsAgain() throws {
        let scripts = try ScriptDirectory()
        let counter = scripts.path("runs")
        let command = try scripts.script(
            "token",
            "echo run >> '\(counter)'\necho token-$(wc -l < '\(counter)' | tr -d ' ')"
        )
        // A refresh skew larger than the cache lifetime counts as half the lifetime.
        let source = commandSource(command, cacheSeconds: 2, refreshSkewSeconds: 10)
        #expect(try fetch(source).get().value == "token-1")
        #expect(try fetch(source).get().value == "token-1")
        #expect(eventually { (try? fetch(source).get().value) == "token-2" })
    }

    @Test func aFailingCommandReportsItsStatusAndStderr() throws {
        let scripts = try ScriptDirectory()
        let command = try scripts.script("token", "echo 'login expired, run gcloud auth login' >&2\nexit 3")
        let source = commandSource(command)
        guard case .failure(let error) = fetch(source) else {
            Issue.record("a failing command produced a token")
            return
        }
        #expect(error.code == .tokenUnavailable)
        #expect(error.message.contains("status 3"))
        #expect(error.message.contains("login expired"))
    }

    @Test func aHangingCommandIsKilledAtItsTimeout() throws {
        let scripts = try ScriptDirectory()
        // The script's own child holds stdout too: it must be ended with the script.
        let pidFile = scripts.path("child.pid")
        let command = try scripts.script("token", "sleep 30 &\necho $! > \(pidFile)\nwait\necho late")
        let source = commandSource(command, timeout: 0.5)
        guard case .failure(let error) = fetch(source) else {
            Issue.record("a hanging command produced a token")
            return
        }
        #expect(error.message.contains("timed out"))
        let child = try #require(
            Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        )
        // Gone, or a zombie waiting for init to reap it.
        func ended() -> Bool {
            guard let stat = try? String(contentsOfFile: "/proc/\(child)/stat", encoding: .utf8) else { return true }
            return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
        }
        #expect(eventually(ended), "the script's child is still running")
    }

    @Test func aProcessThatLeftTheGroupDoesNotHoldTheFetchForever() throws {
        let scripts = try ScriptDirectory()
        let pidFile = scripts.path("detached.pid")
        // A program in a session of its own keeps stdout open; it is out of the group's reach.
        let command = try scripts.script("token", "setsid sh -c 'echo $$ > \(pidFile); exec sleep 300' &\nwait")
        let source = commandSource(command, timeout: 0.5)
        let outcome = Mutex<Result<AccessToken, ProxyError>?>(nil)
        Thread.detachNewThread {
            let result = fetch(source)
            outcome.withLockedValue { $0 = result }
        }
        defer {
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
                let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                kill(pid, SIGKILL)
            }
        }
        // The fetch ends (reading stops two seconds after the timeout) instead of waiting
        // for the detached program.
        let result = try #require(eventually { outcome.withLockedValue { $0 } })
        guard case .failure(let error) = result else {
            Issue.record("a hanging command produced a token")
            return
        }
        #expect(error.message.contains("timed out"))
    }

    @Test(arguments: ["", "two words", #"{"token": "x"}"#, #"{"access_token": "x", "expires_in": -5}"#, "{not json"])
    func unusableOutputIsRefusedWithoutEchoingIt(output: String) {
        guard case .failure(let refusal) = CommandOutputParser.parse(Data(output.utf8)) else {
            Issue.record("accepted \(output)")
            return
        }
        #expect(output.isEmpty || !refusal.description.contains(output))
    }

    @Test func tokensWithControlCharactersAreNeverFormatted() throws {
        let formatter = CredentialFormatter(header: "Authorization", format: "Bearer {token}")
        let result = formatter.header(for: AccessToken(value: "abc\r\nX-Injected: 1"), provider: "p")
        guard case .failure(let error) = result else {
            Issue.record("a token with CRLF was formatted")
            return
        }
        #expect(!error.message.contains("abc"))
        #expect(try formatter.header(for: AccessToken(value: "t0k"), provider: "p").get().value == "Bearer t0k")
    }

    /// A provider's entry keeps the header it made last: a renewed token must still bring its
    /// own header, and a refused token must never be served from the one before.
    @Test func anEntryMakesANewHeaderWhenTheTokenChanges() throws {
        let registry = CredentialRegistry(
            configuration: TestProxy.configuration(
                """
                {"providers": {"app": {"grant": "static", "token": "unused", "header": "X-Key", "format": "K {token}"}},
                 "routes": []}
                """
            ),
            fetcher: UpstreamFetcher(engine: ForwardingFixture.engine),
            store: MemoryTokenStore(),
            logger: TestLogging.logger
        )
        let entry = try #require(registry.entry("app"))
        let first = try entry.header(for: AccessToken(value: "one")).get()
        #expect(first == CredentialHeader(name: "X-Key", value: "K one"))
        #expect(try entry.header(for: AccessToken(value: "one")).get() == first)
        #expect(try entry.header(for: AccessToken(value: "two")).get().value == "K two")
        guard case .failure = entry.header(for: AccessToken(value: "tw\r\no")) else {
            Issue.record("a token with CRLF was formatted")
            return
        }
        #expect(try entry.header(for: AccessToken(value: "one")).get().value == "K one")
        // Tokens that Swift's String == calls equal (canonically equivalent) but whose bytes
        // differ: the header carries the bytes of the token it is asked for.
        let composed = try entry.header(for: AccessToken(value: "caf\u{E9}")).get()
        let decomposed = try entry.header(for: AccessToken(value: "cafe\u{301}")).get()
        #expect(Array(composed.value.utf8) == Array("K caf\u{E9}".utf8))
        #expect(Array(decomposed.value.utf8) == Array("K cafe\u{301}".utf8))
    }
}

/// A value behind a lock, for collecting results from completion handlers.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    /// The value (guarded by `lock`).
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLockedValue<T>(_ body: (inout Value) -> T) -> T { self.lock.withLock { body(&self.value) } }
}
