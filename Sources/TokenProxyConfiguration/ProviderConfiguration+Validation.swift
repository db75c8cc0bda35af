import Foundation
import TokenProxySupport

extension ProviderConfiguration {
    /// Every problem of this provider, with paths under `path` (`providers.github`): keys its
    /// grant requires, endpoint URLs (https unless `allow_insecure_endpoints`), client
    /// authentication, header and format, and value ranges.
    func problems(at path: String) -> [ConfigurationProblem] {
        var check = ProviderCheck(path: path, provider: self)
        check.endpoints()
        check.grantRequirements()
        if self.grant.usesTokenEndpoint { check.clientAuthentication() }
        check.clientCertificate()
        check.presentation()
        check.values()
        return check.problems
    }
}

/// Accumulates the problems of one provider.
private struct ProviderCheck {
    let path: String
    let provider: ProviderConfiguration
    var problems: [ConfigurationProblem] = []

    init(path: String, provider: ProviderConfiguration) {
        self.path = path
        self.provider = provider
    }

    private var grantName: String { "'\(self.provider.grant.rawValue)'" }

    mutating func add(_ key: String, _ message: String) {
        self.problems.append(ConfigurationProblem(path: ConfigurationPath.join(self.path, key), message: message))
    }

    mutating func require(_ present: Bool, _ key: String, orIssuer: Bool = false) {
        guard !present else { return }
        let alternative = orIssuer ? " (or set 'issuer' for discovery)" : ""
        self.add(key, "required for grant \(self.grantName)\(alternative)")
    }

    /// Endpoint URLs are absolute, and https unless `allow_insecure_endpoints` (RFC 6749 §3.1,
    /// §3.2 require TLS); an issuer has no query (RFC 8414 §2).
    mutating func endpoints() {
        for (key, field) in ProviderConfiguration.endpointKeys {
            guard let url = self.provider[keyPath: field] else { continue }
            switch ConfigurationURL.check(url, allowsQuery: key != "issuer") {
            case .failure(let problem):
                self.add(key, problem.message)
            case .success(.http) where !self.provider.allowInsecureEndpoints:
                self.add(key, "must be an https URL; set allow_insecure_endpoints to true to allow http")
            case .success:
                break
            }
        }
    }

    /// The keys the grant needs (`docs/reference/configuration.md`, "Keys of each grant").
    mutating func grantRequirements() {
        let provider = self.provider
        let hasIssuer = provider.issuer != nil
        if provider.grant.usesTokenEndpoint, provider.grant != .jwtBearer {
            self.require(provider.tokenURL != nil || hasIssuer, "token_url", orIssuer: true)
        }
        switch provider.grant {
        case .clientCredentials:
            self.require(provider.clientID != nil, "client_id")
            if provider.clientAuth == .none, provider.clientSecret == nil, provider.clientAssertionKey == nil {
                self.add("client_secret", "grant 'client_credentials' needs client_secret or client_assertion_key")
            }
        case .refreshToken:
            self.require(provider.clientID != nil, "client_id")
            self.require(provider.refreshToken != nil, "refresh_token")
        case .password:
            self.require(provider.username != nil, "username")
            self.require(provider.password != nil, "password")
        case .authorizationCode:
            self.require(provider.authorizationURL != nil || hasIssuer, "authorization_url", orIssuer: true)
            self.require(provider.clientID != nil, "client_id")
        case .deviceCode:
            self.require(
                provider.deviceAuthorizationURL != nil || hasIssuer,
                "device_authorization_url",
                orIssuer: true
            )
            self.require(provider.clientID != nil, "client_id")
        case .jwtBearer:
            self.jwtBearer()
        case .tokenExchange:
            self.require(provider.subjectToken != nil, "subject_token")
            self.require(provider.subjectTokenType != nil, "subject_token_type")
            if provider.actorToken != nil, provider.actorTokenType == nil {
                self.add("actor_token_type", "required with actor_token (RFC 8693 §2.1)")
            }
            if provider.actorToken == nil, provider.actorTokenType != nil {
                self.add("actor_token_type", "only allowed with actor_token")
            }
        case .staticToken:
            self.require(provider.token != nil, "token")
        case .command:
            if let argv = provider.command {
                if argv.isEmpty || argv[0].isEmpty {
                    self.add("command", "must be a non-empty argv list whose first element names the program")
                }
            } else {
                self.require(false, "command")
            }
        case .oauth1:
            self.oauth1()
        }
    }

    /// RFC 7523: either a service-account file (which holds key, client e-mail and token URI)
    /// or a PEM `key` with the `iss` and `aud` claims; `sub` defaults to `iss`.
    mutating func jwtBearer() {
        let provider = self.provider
        switch (provider.serviceAccountFile, provider.key) {
        case (.some, .some):
            self.add("key", "use either service_account_file or key, not both")
        case (nil, nil):
            self.add("key", "grant 'jwt_bearer' needs service_account_file, or key with issuer_claim and audience")
        case (nil, .some):
            self.require(provider.tokenURL != nil || provider.issuer != nil, "token_url", orIssuer: true)
            if provider.issuerClaim == nil { self.add("issuer_claim", "required with key (the assertion's 'iss')") }
            if provider.audience == nil { self.add("audience", "required with key (the assertion's 'aud')") }
        case (.some, nil):
            break
        }
    }

    /// RFC 5849: consumer credentials, plus a token with its secret or the three login URLs.
    mutating func oauth1() {
        let provider = self.provider
        self.require(provider.consumerKey != nil, "consumer_key")
        if provider.oauth1SignatureMethod == .rsaSHA1 {
            if provider.privateKey == nil, provider.consumerSecret == nil {
                self.add(
                    "private_key",
                    "required with signature_method 'RSA-SHA1' (the consumer's PEM RSA private key)"
                )
            }
        } else {
            self.require(provider.consumerSecret != nil, "consumer_secret")
            if provider.privateKey != nil {
                self.add("private_key", "only used with signature_method 'RSA-SHA1'; this provider signs with a secret")
            }
        }
        if (provider.token == nil) != (provider.tokenSecret == nil) {
            self.add(provider.token == nil ? "token" : "token_secret", "token and token_secret go together")
        }
        let loginURLs = [
            ("request_token_url", provider.requestTokenURL), ("authorize_url", provider.authorizeURL),
            ("access_token_url", provider.accessTokenURL),
        ]
        let given = loginURLs.filter { $0.1 != nil }.count
        if given > 0, given < loginURLs.count {
            for (key, value) in loginURLs where value == nil {
                self.add(
                    key,
                    "required for the three-legged login (with request_token_url, authorize_url and access_token_url)"
                )
            }
        } else if given == 0, provider.token == nil {
            self.add(
                "token",
                "grant 'oauth1' needs token and token_secret, or request_token_url, authorize_url and access_token_url"
            )
        }
        if let realm = provider.realm, !realm.allSatisfy({ $0.isASCII && !$0.isNewline && $0 != "\"" && $0 != "\\" }) {
            self.add("realm", "must be printable ASCII without quotes or backslashes (it is sent as a quoted string)")
        }
        if let method = provider.signatureMethod, OAuth1SignatureMethod(rawValue: method) == nil {
            self.add(
                "signature_method",
                ConfigurationKeySuggestion.choiceMessage(
                    method,
                    choices: OAuth1SignatureMethod.allCases.map(\.rawValue)
                )
            )
        }
    }

    /// The credential matches `client_auth` (RFC 6749 §2.3, RFC 7523 §2.2).
    mutating func clientAuthentication() {
        let provider = self.provider
        let method = "client_auth '\(provider.clientAuth.rawValue)'"
        switch provider.clientAuth {
        case .clientSecretBasic, .clientSecretPost:
            if provider.clientSecret == nil { self.add("client_secret", "required with \(method)") }
            if provider.clientAssertionKey != nil { self.add("client_assertion_key", "not used with \(method)") }
        case .privateKeyJWT:
            if provider.clientAssertionKey == nil { self.add("client_assertion_key", "required with \(method)") }
            if provider.clientSecret != nil {
                self.add("client_secret", "not used with \(method); remove it or set client_auth")
            }
        case .none:
            if provider.clientSecret != nil { self.add("client_secret", "not used with \(method)") }
            if provider.clientAssertionKey != nil { self.add("client_assertion_key", "not used with \(method)") }
        case .tlsClientAuth, .selfSignedTLSClientAuth:
            // RFC 8705 §2: the certificate authenticates the client; nothing else is sent.
            if provider.clientCert == nil {
                self.add("client_cert", "required with \(method) (the PEM client certificate presented over TLS)")
            }
            if provider.clientKey == nil {
                self.add("client_key", "required with \(method) (the client certificate's PEM private key)")
            }
            if provider.clientSecret != nil { self.add("client_secret", "not used with \(method)") }
            if provider.clientAssertionKey != nil { self.add("client_assertion_key", "not used with \(method)") }
        }
        // Grants that always need a client_id were checked with their other keys.
        if provider.clientAuth != .none, provider.clientID == nil, !Self.grantsNeedingClientID.contains(provider.grant)
        {
            self.add("client_id", "required with \(method)")
        }
    }

    /// `client_cert` and `client_key` go together, and a literal value must be PEM (a path
    /// belongs in `{"file": PATH}`). A missing one under a mutual-TLS `client_auth` was
    /// reported with the method.
    mutating func clientCertificate() {
        let provider = self.provider
        if provider.grant.usesTokenEndpoint, provider.clientAuth.isMutualTLS,
            provider.clientCert == nil || provider.clientKey == nil
        {
            return
        }
        if provider.clientKey != nil, provider.clientCert == nil {
            self.add("client_key", "needs client_cert")
        }
        if provider.clientCert != nil, provider.clientKey == nil {
            self.add("client_key", "required with client_cert (the client certificate's PEM private key)")
        }
        if case .literal(let value) = provider.clientCert, !value.contains("-----BEGIN CERTIFICATE-----") {
            self.add(
                "client_cert",
                "must hold a PEM certificate; for a certificate file use {\"file\": \"/path/to/cert.pem\"}"
            )
        }
        if case .literal(let value) = provider.clientKey, !value.contains("-----BEGIN") {
            self.add("client_key", "must hold a PEM private key; for a key file use {\"file\": \"/path/to/key.pem\"}")
        }
    }

    /// The grants for which `client_id` is always required.
    private static let grantsNeedingClientID: Set<GrantType> = [
        .clientCredentials, .refreshToken, .authorizationCode, .deviceCode,
    ]

    /// The injected header: a valid, non-reserved name and a value template containing `{token}`.
    mutating func presentation() {
        if let problem = ConfigurationSyntax.headerNameProblem(self.provider.header) {
            self.add("header", problem)
        }
        if !self.provider.format.contains("{token}") {
            self.add("format", "must contain {token}, as in \"Bearer {token}\"")
        } else if !ConfigurationSyntax.isFieldValue(self.provider.format) {
            self.add("format", "must not contain CR, LF, NUL or other control characters")
        }
        // Printed as git's `username=` attribute: a line break would start another attribute.
        if self.provider.gitUsername.isEmpty || !ConfigurationSyntax.isFieldValue(self.provider.gitUsername) {
            self.add("git_username", "must be non-empty, without CR, LF, NUL or other control characters")
        }
        for (index, scope) in self.provider.scopes.enumerated() where !ConfigurationSyntax.isScopeToken(scope) {
            self.add(
                ConfigurationPath.index("scopes", index),
                "must be a non-empty scope without spaces, '\"' or '\\' (RFC 6749 §3.3)"
            )
        }
        for (name, value) in self.provider.tokenRequestHeaders.sorted(by: { $0.key < $1.key }) {
            let key = ConfigurationPath.join("token_request_headers", name)
            if let problem = ConfigurationSyntax.headerNameProblem(name) {
                self.add(key, problem)
            } else if !ConfigurationSyntax.isFieldValue(value) {
                self.add(key, "must not contain CR, LF, NUL or other control characters")
            }
        }
        for name in self.provider.tokenRequestParams.keys.sorted() where name.isEmpty {
            self.add("token_request_params", "parameter names must not be empty")
        }
        self.proofOfPossession()
    }

    /// A DPoP-bound token goes out as `Authorization: DPoP TOKEN` (RFC 9449 §7.1), and the
    /// proof's header is `DPoP`: neither can be renamed or reformatted.
    private mutating func proofOfPossession() {
        guard self.provider.dpop != nil else { return }
        if self.provider.header.lowercased() != "authorization" {
            self.add("header", "cannot be changed with dpop: a bound token goes in Authorization (RFC 9449 §7.1)")
        }
        if self.provider.format != "Bearer {token}" {
            self.add("format", "cannot be changed with dpop: the scheme follows the token_type the server answers")
        }
        if case .literal(let value)? = self.provider.dpop?.key, !value.contains("-----BEGIN") {
            self.add(
                ConfigurationPath.join("dpop", "key"),
                "must be a PEM private key; a key in a file is written {\"file\": PATH}"
            )
        }
        for name in self.provider.tokenRequestHeaders.keys.sorted() where name.lowercased() == "dpop" {
            self.add(ConfigurationPath.join("token_request_headers", name), "is the proof dpop makes for each request")
        }
    }

    /// Durations, ports, algorithms, type URIs and file names.
    mutating func values() {
        let provider = self.provider
        if let alg = provider.alg, JWTAlgorithm(rawValue: alg) == nil {
            let choices = JWTAlgorithm.allCases.map(\.rawValue)
            self.add("alg", ConfigurationKeySuggestion.choiceMessage(alg, choices: choices))
        }
        if !(provider.refreshSkewSeconds >= 0 && provider.refreshSkewSeconds <= Limits.maxSeconds) {
            self.add("refresh_skew_seconds", "must be from 0 to \(Int(Limits.maxSeconds)) seconds")
        }
        if let value = provider.defaultExpiresIn, !(value > 0 && value <= BoundedSeconds.maximumLifetime) {
            self.add(
                "default_expires_in",
                "must be positive and at most \(Int(BoundedSeconds.maximumLifetime)) seconds"
            )
        }
        if let value = provider.interval, !(value > 0 && value <= 3_600) {
            self.add("interval", "must be positive and at most 3600 seconds")
        }
        if let value = provider.cacheSeconds, !(value >= 0 && value <= BoundedSeconds.maximumLifetime) {
            self.add("cache_seconds", "must be from 0 to \(Int(BoundedSeconds.maximumLifetime)) seconds")
        }
        if provider.redirectPort == 0 {
            self.add("redirect_port", "must be 1 to 65535 (leave it out for an ephemeral port)")
        }
        let uris = [
            ("subject_token_type", provider.subjectTokenType), ("actor_token_type", provider.actorTokenType),
            ("requested_token_type", provider.requestedTokenType), ("resource", provider.resource),
        ]
        for case (let key, let value?) in uris where !Self.isAbsoluteURI(value) {
            self.add(key, "must be an absolute URI, such as urn:ietf:params:oauth:token-type:jwt")
        }
        if let resource = provider.resource, resource.contains("#") {
            self.add("resource", "must not contain a fragment (RFC 8707 §2)")
        }
        for (key, field) in ProviderConfiguration.pathKeys where provider[keyPath: field]?.isEmpty == true {
            self.add(key, "must not be empty")
        }
        let names = [
            ("client_id", provider.clientID), ("username", provider.username),
            ("issuer_claim", provider.issuerClaim), ("subject", provider.subject),
            ("consumer_key", provider.consumerKey),
            ("audience", provider.audience),
        ]
        for case (let key, let value?) in names where value.isEmpty {
            self.add(key, "must not be empty")
        }
    }

    /// `scheme ":" ...` with an RFC 3986 scheme.
    private static func isAbsoluteURI(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex,
            text.index(after: colon) != text.endIndex
        else { return false }
        let scheme = text[..<colon]
        return scheme.first?.isLetter == true
            && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }
}
