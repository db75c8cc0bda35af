import Crypto
import CryptoExtras
import Foundation
import TokenProxyConfiguration
import TokenProxySupport

/// Signs the JWTs of RFC 7523: grant assertions (`jwt_bearer`) and client assertions
/// (`private_key_jwt`), with RS256 (RSASSA-PKCS1-v1_5 SHA-256) or ES256 (ECDSA P-256 SHA-256,
/// the signature as R‖S, RFC 7518 §3.4). Keys come as PEM (PKCS#8, or PKCS#1 / SEC 1).
struct JWTSigner: Sendable {
    private enum Key: Sendable {
        case rsa(_RSA.Signing.PrivateKey)
        case ec(P256.Signing.PrivateKey)
    }

    private let key: Key
    private let keyID: String?
    /// The JWS `alg`.
    let algorithm: JWTAlgorithm

    /// Why a key could not be used; never contains key material.
    struct Failure: Error, Sendable, CustomStringConvertible {
        var description: String
    }

    init(pem: String, algorithm: JWTAlgorithm, keyID: String? = nil) throws(Failure) {
        self.algorithm = algorithm
        self.keyID = keyID
        do {
            switch algorithm {
            case .rs256: self.key = .rsa(try _RSA.Signing.PrivateKey(pemRepresentation: pem))
            case .es256: self.key = .ec(try P256.Signing.PrivateKey(pemRepresentation: pem))
            }
        } catch {
            throw Failure(description: "the key is not a PEM \(algorithm == .rs256 ? "RSA" : "P-256") private key")
        }
    }

    /// The compact JWS of `claims`.
    func sign(_ claims: [String: any Sendable]) throws(Failure) -> String {
        var header: [String: any Sendable] = ["alg": self.algorithm.rawValue, "typ": "JWT"]
        if let keyID = self.keyID {
            header["kid"] = keyID
        }
        guard let headerJSON = try? JSONSerialization.data(withJSONObject: header, options: [.sortedKeys]),
            let claimsJSON = try? JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        else { throw Failure(description: "claims are not JSON") }
        let input = Base64URL.encode(headerJSON) + "." + Base64URL.encode(claimsJSON)
        let signature: Data
        do {
            switch self.key {
            case .rsa(let key):
                signature = try key.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
                    .rawRepresentation
            case .ec(let key):
                signature = try key.signature(for: SHA256.hash(data: Data(input.utf8))).rawRepresentation
            }
        } catch {
            throw Failure(description: "signing failed")
        }
        return input + "." + Base64URL.encode(signature)
    }
}
