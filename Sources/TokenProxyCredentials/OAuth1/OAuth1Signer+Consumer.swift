import CryptoExtras
import Synchronization
import TokenProxyConfiguration
import TokenProxySupport

/// RSA keys parsed from their PEM text, so a request signed with RSA-SHA1 does not parse the
/// key again; a rotated key file is new text and is parsed once. A few keys at most.
private let parsedRSAKeys = Mutex<[String: _RSA.Signing.PrivateKey]>([:])

extension OAuth1Signer.Credentials {
    /// The consumer's half of `provider`'s signing credentials (no token yet), with its
    /// secrets read now: what a login signs its first request with, and what the token pair
    /// is added to for every other request.
    static func consumer(of provider: ProviderConfiguration) -> Result<Self, ProxyError> {
        let name = provider.name
        let method = provider.oauth1SignatureMethod
        guard let consumerKey = provider.consumerKey else {
            return .failure(ProxyError(.tokenUnavailable, "consumer_key is needed", provider: name))
        }
        // RSA-SHA1 signs with the private key alone (RFC 5849 §3.4.3); the other methods
        // with the consumer secret.
        let secretKey = method == .rsaSHA1 ? (provider.privateKey ?? provider.consumerSecret) : provider.consumerSecret
        guard let secret = secretKey else {
            let key = method == .rsaSHA1 ? "private_key" : "consumer_secret"
            return .failure(ProxyError(.tokenUnavailable, "\(key) is needed", provider: name))
        }
        let value: String
        do {
            value = try secret.resolve()
        } catch {
            return .failure(ProxyError(.tokenUnavailable, "a secret cannot be read: \(error)", provider: name))
        }
        var rsaKey: _RSA.Signing.PrivateKey?
        if method == .rsaSHA1 {
            do {
                rsaKey = try Self.rsaKey(pem: value)
            } catch {
                let key = provider.privateKey == nil ? "consumer_secret" : "private_key"
                return .failure(
                    ProxyError(
                        .tokenUnavailable,
                        "\(key) is not a PEM RSA private key of 2048 bits or more",
                        provider: name
                    )
                )
            }
        }
        return .success(
            Self(
                consumerKey: consumerKey,
                consumerSecret: method == .rsaSHA1 ? "" : value,
                token: nil,
                tokenSecret: nil,
                method: method,
                rsaKey: rsaKey,
                realm: provider.realm
            )
        )
    }

    /// The private key in `pem`, parsed once per distinct text.
    private static func rsaKey(pem: String) throws -> _RSA.Signing.PrivateKey {
        if let known = parsedRSAKeys.withLockedValue({ $0[pem] }) { return known }
        let key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        parsedRSAKeys.withLockedValue { keys in
            if keys.count >= 8 { keys.removeAll() }
            keys[pem] = key
        }
        return key
    }
}
