import Foundation

extension ProviderConfiguration: Decodable {
    /// Decodes one provider object; its name is its key under `providers`.
    ///
    /// Unknown keys and keys of another grant are recorded ("'username' does not apply to grant
    /// 'client_credentials'"), and so is every value of the wrong type, in one pass. A provider
    /// without a valid `grant` is recorded and left out (routes naming it are not reported again).
    package init(from decoder: any Decoder) throws {
        self = try decoder.withConfigurationProblems { problems in
            let object = try decoder.configurationObject(keyedBy: ConfigurationCodingKey.self, problems)
            let name = decoder.codingPath.last?.stringValue ?? ""
            let present = decoder.configurationKeys(known: GrantType.allKeys, problems)
            let reader = ProviderFieldReader(object: object, problems: problems)

            let grantKey = ConfigurationCodingKey("grant")
            let grant = object.configEnum(GrantType.self, forKey: grantKey, problems)
            if !object.contains(grantKey) {
                let choices = GrantType.allCases.map { "'\($0.rawValue)'" }.joined(separator: ", ")
                problems.add(at: decoder.codingPath + [grantKey], "missing required key; one of \(choices)")
            }
            if let grant {
                let accepted = Set(grant.keys)
                for key in present.sorted() where !accepted.contains(key) && GrantType.allKeys.contains(key) {
                    problems.add(
                        at: decoder.codingPath + [ConfigurationCodingKey(key)],
                        "'\(key)' does not apply to grant '\(grant.rawValue)'"
                    )
                }
            }

            var provider = ProviderConfiguration(name: name, grant: grant ?? .staticToken)
            reader.read(&provider)
            let explicitAuth = object.configEnum(
                ClientAuthMethod.self,
                forKey: ConfigurationCodingKey("client_auth"),
                problems
            )
            provider.clientAuth = explicitAuth ?? provider.defaultClientAuth

            guard grant != nil else {
                problems.markBroken(provider: name)
                throw ConfigurationProblemReported()
            }
            return provider
        }
    }

    /// The `client_auth` used when none is configured (`docs/reference/configuration.md`: `client_secret_basic` when a
    /// secret is given, else `none`; an assertion key selects `private_key_jwt`).
    var defaultClientAuth: ClientAuthMethod {
        if self.clientAssertionKey != nil { return .privateKeyJWT }
        if self.clientSecret != nil { return .clientSecretBasic }
        return .none
    }
}

/// Reads the plain fields of a provider object, recording problems instead of throwing.
private struct ProviderFieldReader {
    var object: KeyedDecodingContainer<ConfigurationCodingKey>
    var problems: ConfigurationProblemCollector

    func value<T: Decodable>(_ key: String, _ type: T.Type) -> T? {
        assert(GrantType.allKeys.contains(key), "\(key) is missing from GrantType's key tables")
        return self.object.configValue(type, forKey: ConfigurationCodingKey(key), self.problems)
    }

    func read(_ provider: inout ProviderConfiguration) {
        for (key, field) in ProviderConfiguration.endpointKeys {
            provider[keyPath: field] = self.value(key, String.self)
        }
        for (key, field) in ProviderConfiguration.secretKeys {
            provider[keyPath: field] = self.value(key, Secret.self)
        }
        for (key, field) in ProviderConfiguration.pathKeys {
            provider[keyPath: field] = self.value(key, String.self)
        }
        provider.clientID = self.value("client_id", String.self)
        provider.scopes =
            self.object.configList(String.self, forKey: ConfigurationCodingKey("scopes"), self.problems) ?? []
        provider.audience = self.value("audience", String.self)
        provider.resource = self.value("resource", String.self)
        provider.tokenRequestParams =
            self.object.configMap(String.self, forKey: ConfigurationCodingKey("token_request_params"), self.problems)
            ?? [:]
        provider.tokenRequestHeaders =
            self.object.configMap(String.self, forKey: ConfigurationCodingKey("token_request_headers"), self.problems)
            ?? [:]
        provider.refreshSkewSeconds = self.value("refresh_skew_seconds", Double.self) ?? 60
        provider.defaultExpiresIn = self.value("default_expires_in", Double.self)
        provider.header = self.value("header", String.self) ?? "Authorization"
        provider.format = self.value("format", String.self) ?? "Bearer {token}"
        provider.gitUsername = self.value("git_username", String.self) ?? "x-access-token"
        provider.allowInsecureEndpoints = self.value("allow_insecure_endpoints", Bool.self) ?? false
        provider.dpop = self.value("dpop", DPoPConfiguration.self)

        provider.username = self.value("username", String.self)
        provider.pkce = self.value("pkce", Bool.self) ?? true
        provider.redirectPort = self.value("redirect_port", UInt16.self)
        provider.interval = self.value("interval", Double.self)
        provider.issuerClaim = self.value("issuer_claim", String.self)
        provider.subject = self.value("subject", String.self)
        provider.alg = self.value("alg", String.self)
        provider.subjectTokenType = self.value("subject_token_type", String.self)
        provider.actorTokenType = self.value("actor_token_type", String.self)
        provider.requestedTokenType = self.value("requested_token_type", String.self)
        provider.command = self.object.configList(String.self, forKey: ConfigurationCodingKey("command"), self.problems)
        provider.cacheSeconds = self.value("cache_seconds", Double.self)
        provider.consumerKey = self.value("consumer_key", String.self)
        provider.signatureMethod = self.value("signature_method", String.self)
        provider.realm = self.value("realm", String.self)
    }
}
