import Logging
import Synchronization
import TokenProxyConfiguration
import TokenProxyMetrics

/// A provider's DPoP key (RFC 9449) and the nonces its servers gave. The key is the
/// configured one (`dpop.key`), or the one kept in the provider's record in the token
/// store, or, when neither exists yet, a new one that the next write of the record keeps,
/// so the tokens bound to it stay usable after a restart and in every process sharing the
/// store.
package final class DPoPKeyring: Sendable {
    /// A key to prove possession with, and what the record is to keep of it.
    struct Key: Sendable {
        let binding: DPoPBinding
        /// The PEM the provider's record keeps: a generated key's; nil for a configured key,
        /// which stays in its secret.
        let storedPEM: String?
        let keyring: DPoPKeyring

        /// The binding of a token the endpoint answered with `tokenType`: a `DPoP` token is
        /// bound to the key; a `Bearer` one (a server that ignored the proof) is used as a
        /// bearer token, with a warning once.
        func binding(for tokenType: String?) -> DPoPBinding? {
            if tokenType?.lowercased() == "dpop" {
                return self.binding
            }
            self.keyring.answeredBearer()
            return nil
        }
    }

    private let provider: String
    private let configuration: DPoPConfiguration
    private let metrics: ProxyMetrics?
    private let logger: Logger
    /// The nonces of the provider's token endpoint and of its routes' upstreams.
    package let nonces = DPoPNonces()
    /// The key last made from a PEM, with that PEM: parsed once, not per token request.
    private let parsed = Mutex<(pem: String, key: DPoPKey)?>(nil)
    private let warned = Atomic<Bool>(false)

    init(provider: String, configuration: DPoPConfiguration, metrics: ProxyMetrics? = nil, logger: Logger) {
        self.provider = provider
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
    }

    /// The thumbprint (`jkt`, RFC 7638) of the key last used, for `status`; nil before the
    /// first token request.
    package var thumbprint: String? {
        self.parsed.withLockedValue { $0?.key.thumbprint }
    }

    /// The key to use, given the PEM `stored` in the provider's record (if any).
    func key(stored: String?) -> Result<Key, DPoPKey.Failure> {
        do throws(DPoPKey.Failure) {
            if let secret = self.configuration.key {
                let pem: String
                do {
                    pem = try secret.resolve()
                } catch {
                    throw DPoPKey.Failure(description: "the dpop key cannot be read: \(error)")
                }
                return .success(self.key(try self.parse(pem), storedPEM: nil))
            }
            if let stored {
                return .success(self.key(try self.parse(stored), storedPEM: stored))
            }
            let generated = try DPoPKey.generate(self.configuration.algorithm)
            let pem = generated.pemRepresentation
            self.parsed.withLockedValue { $0 = (pem, generated) }
            self.logger.info(
                "generated a DPoP key",
                metadata: ["provider": "\(self.provider)", "jkt": "\(generated.thumbprint)"]
            )
            return .success(self.key(generated, storedPEM: pem))
        } catch {
            return .failure(error)
        }
    }

    private func key(_ key: DPoPKey, storedPEM: String?) -> Key {
        let binding = DPoPBinding(key: key, nonces: self.nonces, provider: self.provider, metrics: self.metrics)
        return Key(binding: binding, storedPEM: storedPEM, keyring: self)
    }

    private func parse(_ pem: String) throws(DPoPKey.Failure) -> DPoPKey {
        if let last = self.parsed.withLockedValue({ $0 }), last.pem == pem {
            return last.key
        }
        let key = try DPoPKey(pem: pem, algorithm: self.configuration.algorithm)
        self.parsed.withLockedValue { $0 = (pem, key) }
        return key
    }

    /// A server answered a proof with a bearer token: said once per provider.
    fileprivate func answeredBearer() {
        guard !self.warned.exchange(true, ordering: .relaxed) else { return }
        self.logger.warning(
            "the token endpoint ignored the DPoP proof and issued a bearer token; it is used as a bearer token",
            metadata: ["provider": "\(self.provider)"]
        )
    }
}
