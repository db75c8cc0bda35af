import Foundation
import Testing

@testable import TokenProxyConfiguration

/// Helpers shared by the configuration tests.
enum ConfigurationTestSupport {
    /// A fixed environment, so defaults do not depend on the machine.
    static let environment = ["HOME": "/home/tester"]

    /// The repository root, found from this file's path (`Tests/TokenProxyCoreTests/...`).
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Decodes `json` with ``environment`` and no base directory.
    static func decode(_ json: String) throws(ConfigurationError) -> ProxyConfiguration {
        try ProxyConfiguration.decode(Data(json.utf8), environment: Self.environment, baseDirectory: nil)
    }

    /// The problems of `json`, or `[]` when it is valid.
    static func problems(_ json: String) -> [ConfigurationProblem] {
        do {
            _ = try Self.decode(json)
            return []
        } catch {
            return error.problems
        }
    }

    /// A document with `routes` and `providers` (JSON fragments) and optional extra top-level members.
    static func document(providers: String = "{}", routes: String = "[]", extra: String = "") -> String {
        let prefix = extra.isEmpty ? "" : extra + ","
        return "{\(prefix) \"providers\": \(providers), \"routes\": \(routes)}"
    }
}

/// Decoding, defaults, problem reporting, paths and the route table.
@Suite("Configuration")
struct ConfigurationTests {
    @Test("proxy.example.json decodes with no problems and no warnings")
    func exampleDecodes() throws {
        let path = ConfigurationTestSupport.repositoryRoot.appendingPathComponent("proxy.example.json").path
        let configuration = try ProxyConfiguration.load(path: path, environment: ConfigurationTestSupport.environment)
        #expect(configuration.warnings == [])
        #expect(configuration.routes.count >= 5)
        let grants = Set(configuration.providers.values.map(\.grant))
        let expected: Set<GrantType> = [
            .clientCredentials, .refreshToken, .authorizationCode, .deviceCode, .jwtBearer, .staticToken, .command,
            .oauth1, .tokenExchange,
        ]
        #expect(expected.isSubset(of: grants))
        #expect(configuration.routes.allSatisfy { $0.upstream.hasPrefix("https://") })
        #expect(
            configuration.tokenStore
                == .file(path: "/home/tester/.local/state/tokenproxy/tokens.json", encryptionKey: nil)
        )
        #expect(configuration.providers["github"]?.format == "token {token}")
        #expect(configuration.providers["salesforce"]?.clientAuth == .clientSecretPost)
        #expect(configuration.providers["partner"]?.jwtAlgorithm == .es256)
        #expect(configuration.providers["twitter"]?.needsLogin == true)
    }

    @Test("a minimal configuration gets every default")
    func minimalDefaults() throws {
        let configuration = try ConfigurationTestSupport.decode(#"{"providers":{},"routes":[]}"#)
        #expect(configuration.listen == .inet(host: "127.0.0.1", port: 8080))
        #expect(configuration.allowRemoteClients == false)
        #expect(configuration.allowedHosts == ["localhost", "127.0.0.1", "[::1]", "::1"])
        #expect(configuration.requireHeader == nil)
        #expect(
            configuration.tokenStore
                == .file(path: "/home/tester/.local/state/tokenproxy/tokens.json", encryptionKey: nil)
        )
        #expect(configuration.admin == .pathPrefix("/_tokenproxy"))
        #expect(configuration.limits == Limits())
        #expect(configuration.providers.isEmpty)
        #expect(configuration.routes.isEmpty)
        #expect(configuration.warnings.map(\.path) == ["routes"])

        let limits = Limits()
        #expect(limits.tokenWaitSeconds == 15)
        #expect(limits.maxHeaderBytes == 65_536)
        #expect(limits.maxHeaderCount == 100)
        #expect(limits.maxRequestLineBytes == 8_192)
        #expect(limits.maxChunkExtensionBytes == 16_384)
        #expect(limits.headerTimeoutSeconds == 10)
        #expect(limits.idleTimeoutSeconds == 60)
        #expect(limits.replayBufferBytes == 1_048_576)
        #expect(limits.maxConnections == 1_024)
        #expect(limits.upstreamConnectTimeoutSeconds == 10)
        #expect(limits.upstreamFirstByteTimeoutSeconds == 60)
        #expect(limits.drainTimeoutSeconds == 30)
    }

    @Test("route and provider keys get their defaults")
    func routeAndProviderDefaults() throws {
        let configuration = try ConfigurationTestSupport.decode(
            ConfigurationTestSupport.document(
                providers: #"{"key": {"grant": "static", "token": {"env": "K"}}}"#,
                routes: #"[{"path_prefix": "/api/", "upstream": "https://api.example.com", "provider": "key"}]"#
            )
        )
        let route = try #require(configuration.routes.first)
        #expect(route == RouteConfiguration(pathPrefix: "/api", upstream: "https://api.example.com", provider: "key"))
        #expect(route.name == "/api")
        #expect(route.stripPrefix && route.retryOn401 && !route.preserveHost && !route.allowInsecureUpstream)
        #expect(route.incomingAuthorization == .replace)
        let provider = try #require(configuration.providers["key"])
        #expect(provider.name == "key")
        #expect(provider.header == "Authorization")
        #expect(provider.format == "Bearer {token}")
        #expect(provider.refreshSkewSeconds == 60)
        #expect(provider.pkce)
        #expect(provider.clientAuth == .none)
    }

    @Test(
        "client_auth defaults from the credentials given",
        arguments: [
            (#""client_secret": {"env": "S"}"#, ClientAuthMethod.clientSecretBasic),
            (#""client_assertion_key": {"file": "/k.pem"}"#, .privateKeyJWT),
            (#""client_secret": {"env": "S"}, "client_auth": "client_secret_post""#, .clientSecretPost),
        ]
    )
    func clientAuthDefault(credentials: String, expected: ClientAuthMethod) throws {
        let provider = #"{"p": {"grant": "client_credentials", "token_url": "https://a/t", "client_id": "c", "#
        let configuration = try ConfigurationTestSupport.decode(
            ConfigurationTestSupport.document(providers: provider + credentials + "}}")
        )
        #expect(configuration.providers["p"]?.clientAuth == expected)
    }

    @Test("every problem is reported at once, each with its path")
    func severalProblemsAtOnce() throws {
        let url = try #require(
            Bundle.module.url(forResource: "Fixtures/configuration-many-problems", withExtension: "json")
        )
        #expect {
            try ProxyConfiguration.load(path: url.path, environment: ConfigurationTestSupport.environment)
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            let paths = Set(error.problems.map(\.path))
            let expected: Set<String> = [
                "listen", "limits.max_connections", "limits.idle_timeout_secs", "providers.github.token_url",
                "providers.github.username", "routes[0].upsteam", "routes[0].upstream", "routes[1].upstream",
                "routes[2].provider", "routes[3].strip_prefix", "routes[3].path_prefix",
            ]
            #expect(expected.isSubset(of: paths), "missing: \(expected.subtracting(paths))")
            #expect(error.description.split(separator: "\n").count == error.problems.count)
            #expect(!error.description.contains("hunter2"))
            return true
        }
    }

    @Test("an unknown key is an error with a suggestion")
    func unknownKeySuggestion() {
        let problems = ConfigurationTestSupport.problems(
            ConfigurationTestSupport.document(routes: #"[{"path_prefix": "/a", "upsteam": "https://a.example"}]"#)
        )
        #expect(
            problems.contains(
                ConfigurationProblem(path: "routes[0].upsteam", message: "unknown key; did you mean 'upstream'?")
            )
        )
        #expect(problems.contains { $0.path == "routes[0].upstream" && $0.message == "missing required key" })
        #expect(
            problems.map(\.description).contains("routes[0].upsteam: unknown key; did you mean 'upstream'?")
        )
    }

    @Test("a camelCase key suggests its snake_case spelling; a far-off key suggests nothing")
    func caseInsensitiveSuggestion() {
        let problems = ConfigurationTestSupport.problems(
            #"{"allowRemoteClients": true, "zzz": 1, "providers": {}, "routes": []}"#
        )
        #expect(
            problems.contains(
                ConfigurationProblem(
                    path: "allowRemoteClients",
                    message: "unknown key; did you mean 'allow_remote_clients'?"
                )
            )
        )
        #expect(problems.contains(ConfigurationProblem(path: "zzz", message: "unknown key")))
    }

    @Test("a key of another grant does not apply")
    func keyOfAnotherGrant() {
        let problems = ConfigurationTestSupport.problems(
            ConfigurationTestSupport.document(
                providers:
                    #"{"p": {"grant": "client_credentials", "token_url": "https://a/t", "#
                    + #""client_id": "c", "client_secret": {"env": "S"}, "username": "u"}}"#
            )
        )
        #expect(
            problems == [
                ConfigurationProblem(
                    path: "providers.p.username",
                    message: "'username' does not apply to grant 'client_credentials'"
                )
            ]
        )
    }

    @Test("a value of the wrong type names its path and both kinds")
    func wrongType() {
        let problems = ConfigurationTestSupport.problems(
            ConfigurationTestSupport.document(
                routes: #"[{"path_prefix": "/a", "upstream": "https://a.example", "strip_prefix": "yes"}, 7]"#,
                extra: #""allowed_hosts": ["localhost", 5], "limits": {"max_connections": 1.5}"#
            )
        )
        #expect(
            problems.contains(
                ConfigurationProblem(path: "routes[0].strip_prefix", message: "expected true or false, found a string")
            )
        )
        #expect(
            problems.contains(ConfigurationProblem(path: "routes[1]", message: "expected an object, found a number"))
        )
        #expect(
            problems.contains(
                ConfigurationProblem(path: "allowed_hosts[1]", message: "expected a string, found a number")
            )
        )
        #expect(
            problems.contains(
                ConfigurationProblem(path: "limits.max_connections", message: "expected an integer, found a number")
            )
        )
        #expect(problems.count == 4)
    }

    @Test("missing providers and routes are reported; the document must be an object")
    func requiredTopLevel() {
        #expect(Set(ConfigurationTestSupport.problems("{}").map(\.path)) == ["providers", "routes"])
        #expect(
            ConfigurationTestSupport.problems("[]") == [
                ConfigurationProblem(path: "", message: "expected an object, found a list")
            ]
        )
    }

    @Test(
        "invalid JSON is one problem with its line and column",
        arguments: [
            ("{\n  \"routes\": [],\n  \"providers\": {},\n}", "line 4, column 1: trailing comma before '}'"),
            ("{\"routes\": [] \"providers\": {}}", "line 1, column 15: expected ',' or '}' after an object member"),
            ("{\n  \"routes\": [abc]}", "line 2, column 14: expected a value (strings need double quotes)"),
            ("", "the document is empty"),
            ("{\"a\": \"x\n\"}", "control character in a string"),
            ("{\"a\": 01}", "invalid number"),
            ("{\"a\": 1} {}", "unexpected content after the end of the document"),
            ("{\"a\": \"\\q\"}", "invalid escape sequence"),
            ("{\"a\": // note\n 1}", "(JSON has no comments)"),
        ]
    )
    func invalidJSON(document: String, message: String) {
        let problems = ConfigurationTestSupport.problems(document)
        #expect(problems.count == 1)
        #expect(problems.first?.path == "")
        #expect(problems.first?.message.contains(message) == true, "\(problems)")
    }

    @Test("a duplicated key is an error at its path")
    func duplicateKey() {
        let problems = ConfigurationTestSupport.problems(
            #"{"providers": {}, "routes": [{"path_prefix": "/a", "#
                + #""upstream": "https://a.example", "upstream": "https://b.example"}]}"#
        )
        #expect(problems == [ConfigurationProblem(path: "routes[0].upstream", message: "duplicate key")])
    }

    @Test("the route table lists every route in aligned columns")
    func routeTable() throws {
        let path = ConfigurationTestSupport.repositoryRoot.appendingPathComponent("proxy.example.json").path
        let configuration = try ProxyConfiguration.load(path: path, environment: ConfigurationTestSupport.environment)
        let lines = configuration.routeTable().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.count == configuration.routes.count + 1)
        #expect(lines[0].hasPrefix("NAME"))
        let upstreamColumn = try #require(lines[0].range(of: "UPSTREAM")).lowerBound.utf16Offset(in: lines[0])
        for (line, route) in zip(lines.dropFirst(), configuration.routes) {
            #expect(line.hasPrefix(route.name + " "))
            #expect(line.contains(route.pathPrefix) && line.contains(route.upstream))
            #expect(line.contains(route.provider ?? "-"))
            #expect(line.range(of: route.upstream)?.lowerBound.utf16Offset(in: line) == upstreamColumn)
            #expect(!line.hasSuffix(" "))
        }
        let columns = lines.map { $0.split(separator: " ").map(String.init) }
        #expect(columns.contains(["status", "*", "/status", "https://www.githubstatus.com/api/v2", "-", "-"]))
        #expect(
            columns.contains([
                "internal", "internal.localhost", "/", "https://internal.example.com", "internal-api", "static",
            ])
        )
    }

    @Test("the default config path is $TOKENPROXY_CONFIG, else ./proxy.json")
    func defaultPath() {
        #expect(ProxyConfiguration.defaultPath(environment: ["TOKENPROXY_CONFIG": "/etc/tp.json"]) == "/etc/tp.json")
        #expect(ProxyConfiguration.defaultPath(environment: ["TOKENPROXY_CONFIG": ""]) == "./proxy.json")
        #expect(ProxyConfiguration.defaultPath(environment: [:]) == "./proxy.json")
    }

    @Test("the default token store follows XDG_STATE_HOME, ignoring a relative one")
    func defaultTokenStorePath() {
        #expect(
            TokenStoreConfiguration.defaultPath(environment: ["XDG_STATE_HOME": "/state", "HOME": "/h"])
                == "/state/tokenproxy/tokens.json"
        )
        #expect(
            TokenStoreConfiguration.defaultPath(environment: ["XDG_STATE_HOME": "rel", "HOME": "/h"])
                == "/h/.local/state/tokenproxy/tokens.json"
        )
    }

    @Test("token_store and admin accept their alternative forms")
    func alternativeForms() throws {
        let memory = try ConfigurationTestSupport.decode(
            ConfigurationTestSupport.document(extra: #""token_store": "memory", "admin": {"listen": "127.0.0.1:9090"}"#)
        )
        #expect(memory.tokenStore == .memory)
        #expect(memory.admin == .listener(.inet(host: "127.0.0.1", port: 9090)))
        let both = ConfigurationTestSupport.problems(
            ConfigurationTestSupport.document(extra: #""admin": {"listen": "127.0.0.1:9090", "path_prefix": "/x"}"#)
        )
        #expect(both.map(\.path) == ["admin"])
    }

    @Test("relative paths are resolved against the configuration file's directory")
    func relativePaths() throws {
        let url = try #require(
            Bundle.module.url(forResource: "Fixtures/configuration-relative-paths", withExtension: "json")
        )
        let directory = url.deletingLastPathComponent().path
        let configuration = try ProxyConfiguration.load(
            path: url.path,
            environment: ConfigurationTestSupport.environment
        )
        #expect(configuration.listen == .unix(path: "/tmp/tokenproxy-fixture.sock"))
        #expect(
            configuration.tokenStore
                == .file(path: directory + "/state/tokens.json", encryptionKey: .file(directory + "/secrets/store-key"))
        )
        #expect(configuration.providers["api"]?.token == .file(directory + "/secrets/api-token"))
        #expect(configuration.providers["api"]?.caFile == "/etc/ssl/ca.pem")
        #expect(configuration.providers["cli"]?.command == [directory + "/bin/print-token", "--json"])
        #expect(configuration.routes[0].caFile == directory + "/ca/internal.pem")
        #expect(configuration.routes[1].clientCert == "/home/tester/tls/client.crt")
    }

    @Test("decode resolves relative paths against the given base directory")
    func relativePathsWithBaseDirectory() throws {
        let json = ConfigurationTestSupport.document(
            providers: #"{"p": {"grant": "static", "token": {"file": "./token"}}}"#,
            extra:
                #""listen": "unix:tp.sock", "admin": {"listen": "unix:~/admin.sock"}, "#
                + #""token_store": {"path": "/abs/t.json"}"#
        )
        let configuration = try ProxyConfiguration.decode(
            Data(json.utf8),
            environment: ConfigurationTestSupport.environment,
            baseDirectory: "/srv/tp"
        )
        #expect(configuration.listen == .unix(path: "/srv/tp/tp.sock"))
        #expect(configuration.admin == .listener(.unix(path: "/home/tester/admin.sock")))
        #expect(configuration.tokenStore == .file(path: "/abs/t.json", encryptionKey: nil))
        #expect(configuration.providers["p"]?.token == .file("/srv/tp/token"))
        let unchanged = try ConfigurationTestSupport.decode(json)
        #expect(unchanged.listen == .unix(path: "tp.sock"))
    }

    @Test("a configuration changed in code is validated again")
    func validateAfterChange() throws {
        var configuration = try ConfigurationTestSupport.decode(ConfigurationTestSupport.document())
        #expect(configuration.validationProblems() == [])
        configuration.listen = try ListenAddress(parsing: "0.0.0.0:8080")
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
        #expect(configuration.validationProblems().map(\.path) == ["listen"])
        configuration.allowRemoteClients = true
        #expect(configuration.validationProblems() == [])
        #expect(configuration.warnings.map(\.path).contains("allowed_hosts"))
    }

    @Test("a plain JSONDecoder also reports every problem")
    func plainDecoder() {
        let data = Data(#"{"listen": 5, "providers": {}, "routes": [], "extra": true}"#.utf8)
        #expect {
            try JSONDecoder().decode(ProxyConfiguration.self, from: data)
        } throws: { error in
            (error as? ConfigurationError)?.problems.map(\.path).sorted() == ["extra", "listen"]
        }
    }
}
