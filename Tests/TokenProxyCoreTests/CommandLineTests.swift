import Foundation
import Synchronization
import Testing

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
