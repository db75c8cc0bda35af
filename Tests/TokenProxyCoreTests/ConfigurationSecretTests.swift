import Foundation
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A private temporary directory, removed when the test ends.
final class ConfigurationTemporaryDirectory {
    /// The directory's absolute path.
    let path: String

    /// Creates a fresh, empty directory.
    init() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tpcfg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        self.path = url.path
    }

    deinit {
        try? FileManager.default.removeItem(atPath: self.path)
    }

    /// Writes `text` to `name` in place (same inode) with `mode`, returning the path.
    @discardableResult
    func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
        let path = self.path + "/" + name
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }
}

/// `Secret` resolution, decoding and redaction, and `secretProblems()`.
@Suite("Configuration secrets")
struct ConfigurationSecretTests {
    @Test("a literal resolves to itself")
    func literal() throws {
        #expect(try Secret.literal("abc").resolve() == "abc")
        #expect(Secret.literal("abc").isLiteral)
        #expect(!Secret.environment("X").isLiteral)
    }

    @Test("an environment secret resolves, and an unset one is an error naming the variable")
    func environment() throws {
        let name = "TPCFG_TEST_\(UInt32.random(in: 0...UInt32.max))"
        setenv(name, "env-secret-value", 1)
        defer { unsetenv(name) }
        #expect(try Secret.environment(name).resolve() == "env-secret-value")
        #expect(throws: ConfigurationError(message: "environment variable \(name)_UNSET is not set")) {
            try Secret.environment(name + "_UNSET").resolve()
        }
    }

    @Test(
        "a file secret loses exactly one trailing newline",
        arguments: [
            ("token\n", "token"), ("token\r\n", "token"), ("token\n\n", "token\n"), ("token", "token"),
            ("line1\nline2\n", "line1\nline2"),
        ]
    )
    func fileTrimming(contents: String, expected: String) throws {
        let directory = try ConfigurationTemporaryDirectory()
        let path = try directory.write("secret", contents)
        #expect(try Secret.file(path).resolve() == expected)
    }

    @Test("a file secret is read again when the file changes, in place or replaced")
    func fileChange() throws {
        let directory = try ConfigurationTemporaryDirectory()
        let path = try directory.write("secret", "first\n")
        let secret = Secret.file(path)
        #expect(try secret.resolve() == "first")
        #expect(try secret.resolve() == "first")
        try directory.write("secret", "other\n")  // same size, same inode
        #expect(try secret.resolve() == "other")
        let replacement = try directory.write("replacement", "third-value")
        #expect(rename(replacement, path) == 0)
        #expect(try secret.resolve() == "third-value")
    }

    @Test("an unreadable, missing or empty file is an error naming the file, never its contents")
    func fileErrors() throws {
        let directory = try ConfigurationTemporaryDirectory()
        #expect {
            try Secret.file(directory.path + "/missing").resolve()
        } throws: { error in
            "\(error)".contains("/missing") && "\(error)".contains("No such file or directory")
        }
        let empty = try directory.write("empty", "\n")
        #expect(throws: ConfigurationError(message: "secret file \(empty) is empty")) {
            try Secret.file(empty).resolve()
        }
        #expect(throws: ConfigurationError.self) { try Secret.file(directory.path).resolve() }
    }

    @Test("printing a secret never shows a literal value")
    func redaction() {
        let secret = Secret.literal("super-secret-literal")
        var dumped = ""
        dump(secret, to: &dumped)
        for text in [secret.description, secret.debugDescription, "\(secret)", String(reflecting: secret), dumped] {
            #expect(!text.contains("super-secret-literal"))
        }
        #expect(Secret.environment("NAME").description == "env:NAME")
        #expect(Secret.file("/p").description == "file:/p")
    }

    @Test("secrets decode from a string, {\"env\": NAME} and {\"file\": PATH}")
    func decoding() throws {
        let configuration = try ConfigurationTestSupport.decode(
            ConfigurationTestSupport.document(
                providers: #"""
                    {"a": {"grant": "static", "token": "lit"}, "b": {"grant": "static", "token": {"env": "B"}},
                     "c": {"grant": "static", "token": {"file": "/run/c"}}}
                    """#
            )
        )
        #expect(configuration.providers["a"]?.token == .literal("lit"))
        #expect(configuration.providers["b"]?.token == .environment("B"))
        #expect(configuration.providers["c"]?.token == .file("/run/c"))
    }

    @Test("no secret value appears in any problem, warning or description")
    func noSecretInMessages() throws {
        let values = ["S3CRET-one", "S3CRET-two", "S3CRET-three", "S3CRET-four", "S3CRET-five"]
        let json = ConfigurationTestSupport.document(
            providers: """
                {"p": {"grant": "client_credentials", "token_url": "http://a.example/t", "client_id": "c",
                       "client_secret": "\(values[0])", "password": "\(values[1])", "client_auth": "client_secret_jwt"},
                 "q": {"grant": "static", "token": "\(values[2])", "format": "Bearer", "header": "X Bad"},
                 "r": {"grant": "static", "token": {"env": 5, "file": "\(values[3])"}}}
                """,
            routes: """
                [{"path_prefix": "/a", "upstream": "https://user:\(values[4])@a.example?k=\(values[4])",
                  "provider": "p", "client_key": "\(values[4])"}]
                """,
            extra: #""require_header": {"name": "X-Check", "value": "\#(values[3])"}"#
        )
        let problems = ConfigurationTestSupport.problems(json)
        #expect(problems.count >= 6)
        var texts = problems.map(\.description)
        texts.append(ConfigurationError(problems: problems).description)

        let valid = ConfigurationTestSupport.document(
            providers: #"{"p": {"grant": "static", "token": "\#(values[2])"}}"#,
            routes:
                #"[{"path_prefix": "/a", "upstream": "https://a.example", "#
                + #""provider": "p", "add_headers": {"X-Api-Key": "k"}}]"#,
            extra: #""require_header": {"name": "X-Check", "value": "\#(values[3])"}"#
        )
        let configuration = try ConfigurationTestSupport.decode(valid)
        texts += configuration.warnings.map(\.description)
        texts.append(configuration.routeTable())
        texts.append(String(describing: configuration))
        texts.append(String(reflecting: configuration))
        var dumped = ""
        dump(configuration, to: &dumped)
        texts.append(dumped)
        for text in texts {
            for value in values {
                #expect(!text.contains(value), "\(value) leaked in: \(text)")
            }
        }
    }

    @Test("secret problems: unset variables warn, files readable by others are refused with the fix")
    func secretProblems() throws {
        let directory = try ConfigurationTemporaryDirectory()
        let open = try directory.write("open", "value-in-open-file", mode: 0o644)
        let closed = try directory.write("closed", "value-in-closed-file", mode: 0o600)
        let configuration = try ConfigurationTestSupport.decode(
            ConfigurationTestSupport.document(
                providers: """
                    {"a": {"grant": "static", "token": {"file": "\(open)"}},
                     "b": {"grant": "static", "token": {"file": "\(closed)"}},
                     "c": {"grant": "static", "token": {"env": "TPCFG_SURELY_UNSET_VARIABLE"}}}
                    """
            )
        )
        let refused = configuration.secretPermissionProblems()
        #expect(refused.map(\.path) == ["providers.a.token"])
        #expect(refused.first?.message.contains("chmod 600 \(open)") == true)
        #expect(refused.first?.message.contains("0644") == true)
        let unresolvable = configuration.unresolvableSecrets()
        #expect(unresolvable.map(\.path) == ["providers.c.token"])
        #expect(unresolvable.first?.message == "environment variable TPCFG_SURELY_UNSET_VARIABLE is not set")
        let problems = configuration.secretProblems()
        #expect(problems.count == 2)
        #expect(!problems.map(\.description).joined().contains("value-in-"))
    }
}
