import Foundation
import Testing

@testable import TokenProxyConfiguration

/// `ListenAddress` parsing, printing and loopback detection.
@Suite("Configuration listen addresses")
struct ConfigurationListenAddressTests {
    @Test(
        "valid addresses parse and print back the same",
        arguments: [
            ("127.0.0.1:8080", ListenAddress.inet(host: "127.0.0.1", port: 8080)),
            ("0.0.0.0:0", .inet(host: "0.0.0.0", port: 0)),
            ("localhost:65535", .inet(host: "localhost", port: 65535)),
            ("proxy.internal:443", .inet(host: "proxy.internal", port: 443)),
            ("[::1]:8080", .inet(host: "::1", port: 8080)),
            ("[fe80::1:2]:1", .inet(host: "fe80::1:2", port: 1)),
            ("[::ffff:127.0.0.1]:80", .inet(host: "::ffff:127.0.0.1", port: 80)),
            ("unix:/run/tokenproxy.sock", .unix(path: "/run/tokenproxy.sock")),
            ("unix:relative.sock", .unix(path: "relative.sock")),
        ]
    )
    func parses(text: String, expected: ListenAddress) throws {
        let address = try ListenAddress(parsing: text)
        #expect(address == expected)
        #expect(address.description == text)
        #expect(try ListenAddress(parsing: address.description) == address)
    }

    @Test(
        "malformed addresses are refused with a clear message",
        arguments: [
            ("", "missing port"),
            ("8080", "missing port"),
            ("localhost", "missing port"),
            (":8080", "missing host"),
            ("::1:8080", "must be in brackets"),
            ("[::1]", "missing port"),
            ("[::1]8080", "missing port"),
            ("[::1:8080", "closing ']'"),
            ("[zz::1]:80", "not a valid IPv6 address"),
            ("[fe80::1%eth0]:80", "not a valid IPv6 address"),
            ("127.0.0.1:65536", "0 to 65535"),
            ("127.0.0.1:-1", "0 to 65535"),
            ("127.0.0.1:", "0 to 65535"),
            ("127.0.0.1:80a", "0 to 65535"),
            ("256.0.0.1:80", "not a valid IPv4 address"),
            ("127.1:80", "not a valid IPv4 address"),
            ("010.0.0.1:80", "not a valid IPv4 address"),
            ("bad host:80", "not a valid IPv4 address or host name"),
            ("-bad.example:80", "not a valid IPv4 address or host name"),
            ("unix:", "needs a path"),
            ("unix:/" + String(repeating: "x", count: 200), "at most"),
        ]
    )
    func refuses(text: String, message: String) {
        #expect {
            try ListenAddress(parsing: text)
        } throws: { error in
            guard let error = error as? ConfigurationError, let problem = error.problems.first else { return false }
            return problem.path.isEmpty && problem.message.contains(message)
        }
    }

    @Test(
        "loopback addresses are recognised",
        arguments: [
            ("127.0.0.1:1", true), ("127.255.0.9:1", true), ("localhost:1", true), ("LOCALHOST:1", true),
            ("[::1]:1", true), ("[0:0:0:0:0:0:0:1]:1", true), ("[::ffff:127.0.0.2]:1", true), ("unix:/tmp/s", true),
            ("0.0.0.0:1", false), ("10.0.0.1:1", false), ("128.0.0.1:1", false), ("[::]:1", false),
            ("[::2]:1", false), ("example.com:1", false), ("localhost.example.com:1", false),
        ]
    )
    func loopback(text: String, expected: Bool) throws {
        #expect(try ListenAddress(parsing: text).isLoopback == expected)
    }

    @Test("a bad listen value is reported at its path with the parser's message")
    func decodingPath() {
        let problems = ConfigurationTestSupport.problems(
            ConfigurationTestSupport.document(extra: #""listen": "[::1]", "admin": {"listen": 9090}"#)
        )
        #expect(
            problems == [
                ConfigurationProblem(path: "listen", message: "missing port: expected [IPv6]:PORT, as in [::1]:8080"),
                ConfigurationProblem(
                    path: "admin.listen",
                    message: "expected an address string (\"host:port\" or \"unix:/path\"), found a number"
                ),
            ]
        )
    }
}
