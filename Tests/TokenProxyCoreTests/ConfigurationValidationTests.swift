import Foundation
import Testing

@testable import TokenProxyConfiguration

/// One validation rule: a document breaking it, and the problem expected.
struct ConfigurationRuleCase: Sendable, CustomTestStringConvertible {
    /// The rule, as the test case's name.
    var rule: String
    /// The whole document.
    var json: String
    /// The path the problem must have.
    var path: String
    /// Text the problem's message must contain.
    var message: String

    /// Shown by Swift Testing for the case.
    var testDescription: String { self.rule }

    /// A case whose document has these providers and routes (and extra top-level members).
    init(
        _ rule: String,
        providers: String = "{}",
        routes: String = "[]",
        extra: String = "",
        path: String,
        message: String
    ) {
        self.rule = rule
        self.json = ConfigurationTestSupport.document(providers: providers, routes: routes, extra: extra)
        self.path = path
        self.message = message
    }
}

/// Valid providers to build cases from.
private enum P {
    /// A valid static provider named `key`.
    static let staticKey = #""key": {"grant": "static", "token": {"env": "K"}}"#
    /// A valid client_credentials provider `p` with `extra` members.
    static func cc(_ extra: String) -> String {
        #"{"p": {"grant": "client_credentials", "token_url": "https://a.example/t", "#
            + #""client_id": "c", "client_secret": {"env": "S"}"#
            + (extra.isEmpty ? "" : ", " + extra) + "}}"
    }
    /// A provider `p` with this body.
    static func provider(_ body: String) -> String { #"{"p": {"# + body + "}}" }
    /// One valid route with `body` members added.
    static func route(_ body: String) -> String {
        #"[{"path_prefix": "/a", "upstream": "https://a.example""# + (body.isEmpty ? "" : ", " + body) + "}]"
    }
}

/// One test per validation rule, each checking the problem's path and message.
@Suite("Configuration validation")
struct ConfigurationValidationTests {
    /// Every rule, with a document that breaks only it.
    static let cases: [ConfigurationRuleCase] = [
        .init(
            "route names an unknown provider",
            providers: "{\(P.staticKey)}",
            routes: P.route(#""provider": "kye""#),
            path: "routes[0].provider",
            message: "unknown provider 'kye'; did you mean 'key'?"
        ),
        .init(
            "duplicate host and path_prefix",
            routes:
                #"[{"path_prefix": "/a", "upstream": "https://a.example"}, {"name": "b", "#
                + #""path_prefix": "/a/", "upstream": "https://b.example"}]"#,
            path: "routes[1].path_prefix",
            message: "duplicate route: routes[0] has the same host and path_prefix"
        ),
        .init(
            "duplicate route name",
            routes:
                #"[{"name": "x", "path_prefix": "/a", "upstream": "https://a.example"}, "#
                + #"{"name": "x", "path_prefix": "/b", "upstream": "https://b.example"}]"#,
            path: "routes[1].name",
            message: "duplicate route name"
        ),
        .init(
            "http upstream with a provider",
            providers: "{\(P.staticKey)}",
            routes: #"[{"path_prefix": "/a", "upstream": "http://a.example", "provider": "key"}]"#,
            path: "routes[0].upstream",
            message: "refusing to send credentials over plain HTTP; use https, or set allow_insecure_upstream to true"
        ),
        .init(
            "upstream not absolute",
            routes: #"[{"path_prefix": "/a", "upstream": "api.example.com/v1"}]"#,
            path: "routes[0].upstream",
            message: "must be an absolute URL"
        ),
        .init(
            "upstream with user information",
            routes: #"[{"path_prefix": "/a", "upstream": "https://u:pw@a.example"}]"#,
            path: "routes[0].upstream",
            message: "must not contain user information"
        ),
        .init(
            "upstream with a fragment",
            routes: #"[{"path_prefix": "/a", "upstream": "https://a.example/#x"}]"#,
            path: "routes[0].upstream",
            message: "must not contain a fragment"
        ),
        .init(
            "upstream with another scheme",
            routes: #"[{"path_prefix": "/a", "upstream": "ftp://a.example"}]"#,
            path: "routes[0].upstream",
            message: "must be an http or https URL"
        ),
        .init(
            "path_prefix without a leading slash",
            routes: #"[{"path_prefix": "api", "upstream": "https://a.example"}]"#,
            path: "routes[0].path_prefix",
            message: "must start with '/'"
        ),
        .init(
            "path_prefix with a dot segment",
            routes: #"[{"path_prefix": "/a/../b", "upstream": "https://a.example"}]"#,
            path: "routes[0].path_prefix",
            message: "must not contain empty, '.' or '..' segments"
        ),
        .init(
            "route under the admin prefix",
            routes: #"[{"path_prefix": "/_tokenproxy/x", "upstream": "https://a.example"}]"#,
            path: "routes[0].path_prefix",
            message: "is under the admin path prefix"
        ),
        .init(
            "http token_url",
            providers: P.provider(
                #""grant": "client_credentials", "token_url": "http://a.example/t", "#
                    + #""client_id": "c", "client_secret": {"env": "S"}"#
            ),
            path: "providers.p.token_url",
            message: "must be an https URL; set allow_insecure_endpoints to true to allow http"
        ),
        .init(
            "http issuer",
            providers: P.provider(#""grant": "device_code", "issuer": "http://id.example", "client_id": "c""#),
            path: "providers.p.issuer",
            message: "allow_insecure_endpoints"
        ),
        .init(
            "http revocation_url",
            providers: P.cc(#""revocation_url": "http://a.example/r""#),
            path: "providers.p.revocation_url",
            message: "allow_insecure_endpoints"
        ),
        .init(
            "http oauth1 access_token_url",
            providers: P.provider(
                #""grant": "oauth1", "consumer_key": "k", "consumer_secret": {"env": "S"}, "#
                    + #""request_token_url": "https://a/r", "authorize_url": "https://a/a", "#
                    + #""access_token_url": "http://a/t""#
            ),
            path: "providers.p.access_token_url",
            message: "allow_insecure_endpoints"
        ),
        .init(
            "non-loopback listen",
            extra: #""listen": "0.0.0.0:8080""#,
            path: "listen",
            message: "set allow_remote_clients to true"
        ),
        .init(
            "non-loopback admin listener",
            extra: #""admin": {"listen": "192.168.1.2:9000"}"#,
            path: "admin.listen",
            message: "allow_remote_clients"
        ),
        .init(
            "admin prefix with a trailing slash",
            extra: #""admin": {"path_prefix": "/admin/"}"#,
            path: "admin.path_prefix",
            message: "must start with '/', not end with '/'"
        ),
        .init("unparsable listen", extra: #""listen": "localhost""#, path: "listen", message: "missing port"),
        .init(
            "zero limit",
            extra: #""limits": {"max_connections": 0}"#,
            path: "limits.max_connections",
            message: "must be positive"
        ),
        .init(
            "zero max_tunnels",
            extra: #""limits": {"max_tunnels": 0}"#,
            path: "limits.max_tunnels",
            message: "must be positive"
        ),
        .init(
            "absurd tunnel idle time",
            extra: #""limits": {"tunnel_idle_seconds": 1e9}"#,
            path: "limits.tunnel_idle_seconds",
            message: "at most 86400"
        ),
        .init(
            "zero endpoint idle time",
            extra: #""limits": {"endpoint_idle_seconds": 0}"#,
            path: "limits.endpoint_idle_seconds",
            message: "must be positive"
        ),
        .init(
            "negative duration",
            extra: #""limits": {"token_wait_seconds": -1}"#,
            path: "limits.token_wait_seconds",
            message: "must be positive"
        ),
        .init(
            "absurd duration",
            extra: #""limits": {"idle_timeout_seconds": 1e9}"#,
            path: "limits.idle_timeout_seconds",
            message: "at most 86400"
        ),
        .init(
            "unknown limits key",
            extra: #""limits": {"max_header_byte": 10}"#,
            path: "limits.max_header_byte",
            message: "did you mean 'max_header_bytes'?"
        ),
        .init(
            "empty allowed host",
            extra: #""allowed_hosts": ["localhost", ""]"#,
            path: "allowed_hosts[1]",
            message: "must not be empty"
        ),
        .init(
            "bad allowed host",
            extra: #""allowed_hosts": ["http://localhost"]"#,
            path: "allowed_hosts[0]",
            message: "must be a host name"
        ),
        .init(
            "empty allowed_hosts",
            extra: #""allowed_hosts": []"#,
            path: "allowed_hosts",
            message: "must not be empty"
        ),
        .init(
            "require_header with an invalid name",
            extra: #""require_header": {"name": "X Token", "value": {"env": "V"}}"#,
            path: "require_header.name",
            message: "must be a valid header name"
        ),
        .init(
            "require_header without value",
            extra: #""require_header": {"name": "X-Token"}"#,
            path: "require_header.value",
            message: "missing required key"
        ),
        .init(
            "client_credentials without a credential",
            providers: P.provider(#""grant": "client_credentials", "token_url": "https://a/t", "client_id": "c""#),
            path: "providers.p.client_secret",
            message: "needs client_secret or client_assertion_key"
        ),
        .init(
            "client_credentials without token_url",
            providers: P.provider(#""grant": "client_credentials", "client_id": "c", "client_secret": {"env": "S"}"#),
            path: "providers.p.token_url",
            message: "required for grant 'client_credentials' (or set 'issuer' for discovery)"
        ),
        .init(
            "client_secret_basic without a secret",
            providers: P.provider(
                #""grant": "refresh_token", "token_url": "https://a/t", "client_id": "c", "#
                    + #""refresh_token": {"env": "R"}, "client_auth": "client_secret_basic""#
            ),
            path: "providers.p.client_secret",
            message: "required with client_auth 'client_secret_basic'"
        ),
        .init(
            "refresh_token without its seed",
            providers: P.provider(#""grant": "refresh_token", "token_url": "https://a/t", "client_id": "c""#),
            path: "providers.p.refresh_token",
            message: "required for grant 'refresh_token'"
        ),
        .init(
            "password without username",
            providers: P.provider(#""grant": "password", "token_url": "https://a/t", "password": {"env": "P"}"#),
            path: "providers.p.username",
            message: "required for grant 'password'"
        ),
        .init(
            "authorization_code without authorization_url",
            providers: P.provider(#""grant": "authorization_code", "token_url": "https://a/t", "client_id": "c""#),
            path: "providers.p.authorization_url",
            message: "required for grant 'authorization_code'"
        ),
        .init(
            "authorization_code with redirect_port 0",
            providers: P.provider(
                #""grant": "authorization_code", "issuer": "https://id.example", "client_id": "c", "redirect_port": 0"#
            ),
            path: "providers.p.redirect_port",
            message: "must be 1 to 65535"
        ),
        .init(
            "device_code without client_id",
            providers: P.provider(#""grant": "device_code", "issuer": "https://id.example""#),
            path: "providers.p.client_id",
            message: "required for grant 'device_code'"
        ),
        .init(
            "jwt_bearer with neither key nor file",
            providers: P.provider(#""grant": "jwt_bearer", "token_url": "https://a/t""#),
            path: "providers.p.key",
            message: "needs service_account_file, or key with issuer_claim and audience"
        ),
        .init(
            "jwt_bearer key without issuer_claim",
            providers: P.provider(
                #""grant": "jwt_bearer", "token_url": "https://a/t", "key": {"file": "/k"}, "audience": "https://a/t""#
            ),
            path: "providers.p.issuer_claim",
            message: "required with key"
        ),
        .init(
            "jwt_bearer with an unknown alg",
            providers: P.provider(#""grant": "jwt_bearer", "service_account_file": "/sa.json", "alg": "HS256""#),
            path: "providers.p.alg",
            message: "must be one of 'RS256', 'ES256'"
        ),
        .init(
            "token_exchange actor without type",
            providers: P.provider(
                #""grant": "token_exchange", "token_url": "https://a/t", "subject_token": {"file": "/t"}, "#
                    + #""subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "actor_token": {"file": "/a"}"#
            ),
            path: "providers.p.actor_token_type",
            message: "required with actor_token"
        ),
        .init(
            "token_exchange type not a URI",
            providers: P.provider(
                #""grant": "token_exchange", "token_url": "https://a/t", "#
                    + #""subject_token": {"file": "/t"}, "subject_token_type": "jwt""#
            ),
            path: "providers.p.subject_token_type",
            message: "must be an absolute URI"
        ),
        .init(
            "static without token",
            providers: P.provider(#""grant": "static""#),
            path: "providers.p.token",
            message: "required for grant 'static'"
        ),
        .init(
            "command with an empty argv",
            providers: P.provider(#""grant": "command", "command": []"#),
            path: "providers.p.command",
            message: "must be a non-empty argv list"
        ),
        .init(
            "oauth1 without consumer_secret",
            providers: P.provider(
                #""grant": "oauth1", "consumer_key": "k", "token": {"env": "T"}, "token_secret": {"env": "S"}"#
            ),
            path: "providers.p.consumer_secret",
            message: "required for grant 'oauth1'"
        ),
        .init(
            "oauth1 RSA-SHA1 without private_key",
            providers: P.provider(
                #""grant": "oauth1", "consumer_key": "k", "signature_method": "RSA-SHA1", "#
                    + #""token": {"env": "T"}, "token_secret": {"env": "S"}"#
            ),
            path: "providers.p.private_key",
            message: "required with signature_method 'RSA-SHA1'"
        ),
        .init(
            "oauth1 private_key with an HMAC method",
            providers: P.provider(
                #""grant": "oauth1", "consumer_key": "k", "consumer_secret": {"env": "C"}, "#
                    + #""private_key": {"file": "/k.pem"}, "token": {"env": "T"}, "token_secret": {"env": "S"}"#
            ),
            path: "providers.p.private_key",
            message: "only used with signature_method 'RSA-SHA1'"
        ),
        .init(
            "oauth1 token without token_secret",
            providers: P.provider(
                #""grant": "oauth1", "consumer_key": "k", "consumer_secret": {"env": "C"}, "token": {"env": "T"}"#
            ),
            path: "providers.p.token_secret",
            message: "token and token_secret go together"
        ),
        .init(
            "oauth1 with an unknown signature method",
            providers: P.provider(
                #""grant": "oauth1", "consumer_key": "k", "consumer_secret": {"env": "C"}, "#
                    + #""token": {"env": "T"}, "token_secret": {"env": "S"}, "signature_method": "hmac-sha256""#
            ),
            path: "providers.p.signature_method",
            message: "did you mean 'HMAC-SHA256'?"
        ),
        .init(
            "git_username with a line break",
            providers: P.cc(#""git_username": "a\npassword=x""#),
            path: "providers.p.git_username",
            message: "without CR, LF"
        ),
        .init(
            "empty git_username",
            providers: P.cc(#""git_username": """#),
            path: "providers.p.git_username",
            message: "must be non-empty"
        ),
        .init(
            "format without {token}",
            providers: P.cc(#""format": "Bearer token""#),
            path: "providers.p.format",
            message: "must contain {token}"
        ),
        .init(
            "header with CR LF",
            providers: P.cc(#""header": "X-Key\r\nEvil: 1""#),
            path: "providers.p.header",
            message: "must be a valid header name"
        ),
        .init(
            "header managed by the proxy",
            providers: P.cc(#""header": "Host""#),
            path: "providers.p.header",
            message: "managed by the proxy"
        ),
        .init(
            "scope with a space",
            providers: P.cc(#""scopes": ["read write"]"#),
            path: "providers.p.scopes[0]",
            message: "scope without spaces"
        ),
        .init(
            "unknown grant",
            providers: P.provider(#""grant": "client_credential""#),
            path: "providers.p.grant",
            message: "did you mean 'client_credentials'?"
        ),
        .init(
            "missing grant",
            providers: P.provider(#""token": {"env": "T"}"#),
            path: "providers.p.grant",
            message: "missing required key"
        ),
        .init(
            "invalid provider name",
            providers: #"{"git hub": {"grant": "static", "token": {"env": "T"}}}"#,
            path: "providers.git hub",
            message: "provider names may contain only"
        ),
        .init(
            "add_headers with an invalid name",
            routes: P.route(#""add_headers": {"Bad Header": "x"}"#),
            path: "routes[0].add_headers.Bad Header",
            message: "must be a valid header name"
        ),
        .init(
            "add_headers value with a newline",
            routes: P.route(#""add_headers": {"X-A": "x\r\nEvil: 1"}"#),
            path: "routes[0].add_headers.X-A",
            message: "must not contain CR, LF, NUL"
        ),
        .init(
            "add_headers naming the injected header",
            providers: "{\(P.staticKey)}",
            routes: P.route(#""provider": "key", "add_headers": {"authorization": "x"}"#),
            path: "routes[0].add_headers.authorization",
            message: "conflicts with the 'Authorization' header injected by provider 'key'"
        ),
        .init(
            "renew_on_status with a success status",
            routes: P.route(#""renew_on_status": [401, 200]"#),
            path: "routes[0].renew_on_status[1]",
            message: "must be a 4xx or 5xx status"
        ),
        .init(
            "upgrade_protocols entry that is not a token",
            routes: P.route(#""upgrade_protocols": ["web socket"]"#),
            path: "routes[0].upgrade_protocols[0]",
            message: "must be an Upgrade protocol name"
        ),
        .init(
            "remove_headers naming a framing header",
            routes: P.route(#""remove_headers": ["Content-Length"]"#),
            path: "routes[0].remove_headers[0]",
            message: "managed by the proxy"
        ),
        .init(
            "incoming_authorization typo",
            routes: P.route(#""incoming_authorization": "kep""#),
            path: "routes[0].incoming_authorization",
            message: "must be one of 'replace', 'keep', 'reject'; did you mean 'keep'?"
        ),
        .init(
            "client_key as a path",
            routes: P.route(#""client_cert": "/c.pem", "client_key": "/k.pem""#),
            path: "routes[0].client_key",
            message: "for a key file use {\"file\": \"/path/to/key.pem\"}"
        ),
        .init(
            "client_key without client_cert",
            routes: P.route(#""client_key": {"file": "/k.pem"}"#),
            path: "routes[0].client_key",
            message: "needs client_cert"
        ),
        .init(
            "non-positive route timeout",
            routes: P.route(#""timeout_seconds": 0"#),
            path: "routes[0].timeout_seconds",
            message: "must be positive"
        ),
        .init(
            "route host with a path",
            routes: P.route(#""host": "a.example/x""#),
            path: "routes[0].host",
            message: "must be a host name"
        ),
        .init(
            "secret with an empty env name",
            providers: P.provider(#""grant": "static", "token": {"env": ""}"#),
            path: "providers.p.token.env",
            message: "must be an environment variable name"
        ),
        .init(
            "secret with both env and file",
            providers: P.provider(#""grant": "static", "token": {"env": "A", "file": "/b"}"#),
            path: "providers.p.token",
            message: "use either 'env' or 'file', not both"
        ),
        .init(
            "secret of the wrong kind",
            providers: P.provider(#""grant": "static", "token": 42"#),
            path: "providers.p.token",
            message: "expected a string, {\"env\": NAME} or {\"file\": PATH}, found a number"
        ),
        .init(
            "secret with a misspelled key",
            providers: P.provider(#""grant": "static", "token": {"fiel": "/t"}"#),
            path: "providers.p.token.fiel",
            message: "unknown key; did you mean 'file'?"
        ),
        .init(
            "unknown token_store string",
            extra: #""token_store": "disk""#,
            path: "token_store",
            message: "expected \"memory\", {\"path\": ...} or {\"redis\": ...}"
        ),
    ]

    @Test("each rule reports its problem at its path", arguments: Self.cases)
    func rule(_ rule: ConfigurationRuleCase) {
        let problems = ConfigurationTestSupport.problems(rule.json)
        let atPath = problems.filter { $0.path == rule.path }
        #expect(!atPath.isEmpty, "no problem at \(rule.path); got \(problems.map(\.description))")
        #expect(atPath.contains { $0.message.contains(rule.message) }, "\(atPath.map(\.message))")
        #expect(problems.count == 1, "expected only this problem; got \(problems.map(\.description))")
    }

    @Test("an RSA-SHA1 provider needs only its private_key; a login provider only its three URLs")
    func oauth1KeysAccepted() {
        for provider in [
            #""grant": "oauth1", "consumer_key": "k", "signature_method": "RSA-SHA1", "#
                + #""private_key": {"file": "/k.pem"}, "token": {"env": "T"}, "token_secret": {"env": "S"}"#,
            #""grant": "oauth1", "consumer_key": "k", "consumer_secret": {"env": "C"}, "redirect_port": 8123, "#
                + #""request_token_url": "https://p/r", "authorize_url": "https://p/a", "access_token_url": "https://p/t""#,
        ] {
            let problems = ConfigurationTestSupport.problems(
                ConfigurationTestSupport.document(providers: P.provider(provider), routes: "[]")
            )
            #expect(problems.isEmpty, "\(problems.map(\.description))")
        }
    }

    @Test("an http upstream is allowed without a provider, or with allow_insecure_upstream (with a warning)")
    func plainHTTPAllowed() throws {
        let configuration = try ConfigurationTestSupport.decode(
            ConfigurationTestSupport.document(
                providers: "{\(P.staticKey)}",
                routes:
                    #"[{"path_prefix": "/a", "upstream": "http://a.example"}, {"path_prefix": "/b", "#
                    + #""upstream": "http://b.example", "provider": "key", "allow_insecure_upstream": true}]"#
            )
        )
        #expect(
            configuration.warnings.contains(
                ConfigurationProblem(path: "routes[1].upstream", message: "credentials will be sent over plain HTTP")
            )
        )
    }

    @Test("http endpoints are allowed with allow_insecure_endpoints; issuer replaces token_url")
    func insecureEndpointsAllowed() throws {
        let configuration = try ConfigurationTestSupport.decode(
            ConfigurationTestSupport.document(
                providers: P.provider(
                    #""grant": "client_credentials", "issuer": "http://127.0.0.1:9000", "#
                        + #""client_id": "c", "client_secret": {"env": "S"}, "allow_insecure_endpoints": true"#
                )
            )
        )
        #expect(configuration.providers["p"]?.tokenURL == nil)
    }

    @Test("a provider with a broken grant is not reported again by the routes using it")
    func brokenProviderNotRepeated() {
        let problems = ConfigurationTestSupport.problems(
            ConfigurationTestSupport.document(
                providers: P.provider(#""grant": "magic""#),
                routes: P.route(#""provider": "p""#)
            )
        )
        #expect(problems.map(\.path) == ["providers.p.grant"])
    }

    @Test("a literal secret is a warning naming its path, not an error")
    func literalSecretWarnings() throws {
        let configuration = try ConfigurationTestSupport.decode(
            ConfigurationTestSupport.document(
                providers: #"{"p": {"grant": "static", "token": "abc"}}"#,
                routes: P.route(#""provider": "p""#),
                extra: #""require_header": {"name": "X-Check", "value": "v"}"#
            )
        )
        let message = "literal secret; prefer {\"env\": ...} or {\"file\": ...}"
        #expect(
            configuration.warnings == [
                ConfigurationProblem(path: "require_header.value", message: message),
                ConfigurationProblem(path: "providers.p.token", message: message),
            ]
        )
    }

    @Test("the password grant and a disabled Host check are warnings")
    func otherWarnings() throws {
        let configuration = try ConfigurationTestSupport.decode(
            ConfigurationTestSupport.document(
                providers: P.provider(
                    #""grant": "password", "token_url": "https://a/t", "username": "u", "password": {"env": "P"}"#
                ),
                routes: P.route(""),
                extra: #""allowed_hosts": ["*"]"#
            )
        )
        #expect(Set(configuration.warnings.map(\.path)) == ["providers.p.grant", "allowed_hosts"])
    }

    @Test("PLAINTEXT over plain HTTP, and a consumer_secret RSA-SHA1 does not use, are warned about")
    func oauth1Warnings() throws {
        let login =
            #""request_token_url": "http://p/r", "authorize_url": "http://p/a", "#
            + #""access_token_url": "http://p/t""#
        let configuration = try ConfigurationTestSupport.decode(
            ConfigurationTestSupport.document(
                providers: #"{"plain": {"grant": "oauth1", "consumer_key": "k", "consumer_secret": {"env": "C"}, "#
                    + #""signature_method": "PLAINTEXT", "allow_insecure_endpoints": true, \#(login)}, "#
                    + #""rsa": {"grant": "oauth1", "consumer_key": "k", "consumer_secret": {"env": "C"}, "#
                    + #""private_key": {"file": "/k.pem"}, "signature_method": "RSA-SHA1", "#
                    + #""token": {"env": "T"}, "token_secret": {"env": "S"}}}"#,
                routes: "[]"
            )
        )
        let paths = Set(configuration.warnings.map(\.path))
        #expect(paths.contains("providers.plain.signature_method"))
        #expect(paths.contains("providers.rsa.consumer_secret"))
    }
}
