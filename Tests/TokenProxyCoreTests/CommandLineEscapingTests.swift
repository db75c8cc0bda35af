import Foundation
import Testing

/// `token` and `status` show a token endpoint's words with their control characters escaped:
/// one message is one line, and no escape sequence reaches the terminal.
@Suite struct CommandLineEscapingTests {
    private static func hasRawControl(_ text: Substring) -> Bool {
        text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }

    @Test func aRefusalsDescriptionCannotForgeLinesOrColours() throws {
        let auth = try FakeAuthorizationServer()
        let description = #"gone\n2026-01-01T00:00:00+0000 info tokenproxy: forged \u001b[31mred\u001b[0m\u009b2J"#
        auth.enqueue(.init(status: 400, body: #"{"error":"invalid_grant","error_description":"\#(description)"}"#))
        let fixture = try TokenStoreFixture()
        let config = fixture.root + "/proxy.json"
        try """
        {"token_store": {"path": "\(fixture.storePath)"},
         "providers": {"svc": {"grant": "client_credentials", "token_url": "\(auth.tokenURL)", "client_id": "c",
           "client_secret": "s", "allow_insecure_endpoints": true}},
         "routes": []}
        """.write(toFile: config, atomically: true, encoding: .utf8)

        let token = try TokenProxyBinary.run(["token", "svc", "--config", config])
        #expect(token.status == 1)
        let lines = token.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2 && lines[1].isEmpty, "\(token.stderr)")
        #expect(!Self.hasRawControl(lines[0]), "\(token.stderr)")
        #expect(lines[0].contains(#"gone\n2026-01-01"#))
        #expect(lines[0].contains(#"forged \u{1b}[31mred"#))

        let status = try TokenProxyBinary.run(["status", "--config", config])
        let rows = status.stdout.split(separator: "\n")
        #expect(rows.allSatisfy { !Self.hasRawControl($0) }, "\(status.stdout)")
        let row = try #require(rows.first { $0.hasPrefix("svc") })
        #expect(row.contains("invalid_grant"), "\(status.stdout)")
        #expect(row.contains(#"\n"#), "\(status.stdout)")
    }
}
