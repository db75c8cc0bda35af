import Foundation

/// The JWS algorithms a DPoP proof may be signed with (RFC 9449 §4.2; RFC 7518 §3, RFC 8037).
package enum DPoPAlgorithm: String, Sendable, Equatable, CaseIterable {
    /// ECDSA P-256 with SHA-256, the default: small keys and proofs, fast to sign.
    case es256 = "ES256"
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    case rs256 = "RS256"
    /// RSASSA-PSS with SHA-256.
    case ps256 = "PS256"
    /// Ed25519 (RFC 8037).
    case edDSA = "EdDSA"
}

/// A provider's `dpop` key (`docs/guide/sender-constrained-tokens.md`): the algorithm of
/// the proofs, and the private key, or none for a key the proxy generates once and keeps in
/// the token store beside the provider's tokens.
package struct DPoPConfiguration: Sendable, Equatable {
    /// `alg`: `ES256` by default.
    package var algorithm: DPoPAlgorithm
    /// `key`: a PEM private key (a secret); nil to generate one.
    package var key: Secret?

    /// Creates a configuration.
    package init(algorithm: DPoPAlgorithm = .es256, key: Secret? = nil) {
        self.algorithm = algorithm
        self.key = key
    }
}

extension DPoPConfiguration: Decodable {
    /// Decodes `{"alg": ALG, "key": SECRET}`, both optional; every problem is recorded with
    /// its path.
    package init(from decoder: any Decoder) throws {
        self = try decoder.withConfigurationProblems { problems in
            let object = try decoder.configurationObject(keyedBy: ConfigurationCodingKey.self, problems)
            _ = decoder.configurationKeys(known: ["alg", "key"], problems)
            let algorithm = object.configEnum(DPoPAlgorithm.self, forKey: ConfigurationCodingKey("alg"), problems)
            let key = object.configValue(Secret.self, forKey: ConfigurationCodingKey("key"), problems)
            if object.contains(ConfigurationCodingKey("alg")), algorithm == nil {
                throw ConfigurationProblemReported()
            }
            return DPoPConfiguration(algorithm: algorithm ?? .es256, key: key)
        }
    }
}
