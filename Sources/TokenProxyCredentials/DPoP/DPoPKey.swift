import Crypto
import CryptoExtras
import Foundation
import TokenProxyConfiguration
import TokenProxySupport

/// The private key a provider's DPoP proofs are signed with (RFC 9449 §4), with its public
/// JWK and the JWK's SHA-256 thumbprint (RFC 7638), which a server binds its tokens to
/// (`cnf.jkt`). The key itself never leaves this type except as the PEM the token store
/// keeps; neither `description` nor the thumbprint shows it.
package struct DPoPKey: Sendable, CustomStringConvertible {
    private enum Signing: Sendable {
        case p256(P256.Signing.PrivateKey)
        case rsa(_RSA.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
    }

    /// Why a key could not be made or used; never contains key material.
    package struct Failure: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// The JWS `alg` of the proofs.
    package let algorithm: DPoPAlgorithm
    private let signing: Signing
    /// The public JWK as canonical JSON: only the required members, in lexicographic order,
    /// no white space (RFC 7638 §3.2), so it is both the proof header's `jwk` and the input
    /// of the thumbprint.
    let publicJWK: String
    /// base64url(SHA-256(``publicJWK``)): the `jkt` (RFC 9449 §6.1).
    package let thumbprint: String
    /// The proof's JWS header, encoded once: `typ`, `alg` and the public `jwk`.
    private let encodedHeader: String

    /// The key in a PEM document (PKCS#8, or PKCS#1 / SEC 1), for `algorithm`: a P-256 key
    /// for `ES256`, an RSA key of at least 2048 bits for `RS256` and `PS256`, an Ed25519 key
    /// for `EdDSA`.
    package init(pem: String, algorithm: DPoPAlgorithm) throws(Failure) {
        let signing: Signing
        do {
            switch algorithm {
            case .es256: signing = .p256(try P256.Signing.PrivateKey(pemRepresentation: pem))
            case .rs256, .ps256: signing = .rsa(try _RSA.Signing.PrivateKey(pemRepresentation: pem))
            case .edDSA: signing = .ed25519(try Curve25519.Signing.PrivateKey(pemRepresentation: pem))
            }
        } catch {
            throw Failure(description: "the dpop key is not a PEM \(Self.kind(algorithm)) private key")
        }
        try self.init(signing, algorithm: algorithm)
    }

    /// A new random key for `algorithm` (RSA keys of 2048 bits).
    package static func generate(_ algorithm: DPoPAlgorithm) throws(Failure) -> DPoPKey {
        let signing: Signing
        switch algorithm {
        case .es256: signing = .p256(P256.Signing.PrivateKey())
        case .rs256, .ps256:
            do {
                signing = .rsa(try _RSA.Signing.PrivateKey(keySize: .bits2048))
            } catch {
                throw Failure(description: "cannot generate an RSA key")
            }
        case .edDSA: signing = .ed25519(Curve25519.Signing.PrivateKey())
        }
        return try DPoPKey(signing, algorithm: algorithm)
    }

    private init(_ signing: Signing, algorithm: DPoPAlgorithm) throws(Failure) {
        self.algorithm = algorithm
        self.signing = signing
        let jwk: String
        switch signing {
        case .p256(let key):
            // The uncompressed point: 0x04 ‖ X ‖ Y, 32 bytes each.
            let point = key.publicKey.x963Representation
            let x = Base64URL.encode(point.dropFirst().prefix(32))
            let y = Base64URL.encode(point.dropFirst(33))
            jwk = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        case .rsa(let key):
            guard let primitives = try? key.publicKey.getKeyPrimitives() else {
                throw Failure(description: "cannot read the RSA public key")
            }
            let e = Base64URL.encode(Self.unsigned(primitives.publicExponent))
            let n = Base64URL.encode(Self.unsigned(primitives.modulus))
            jwk = #"{"e":"\#(e)","kty":"RSA","n":"\#(n)"}"#
        case .ed25519(let key):
            let x = Base64URL.encode(key.publicKey.rawRepresentation)
            jwk = #"{"crv":"Ed25519","kty":"OKP","x":"\#(x)"}"#
        }
        self.publicJWK = jwk
        self.thumbprint = Base64URL.encode(Data(SHA256.hash(data: Data(jwk.utf8))))
        let header = #"{"alg":"\#(algorithm.rawValue)","jwk":\#(jwk),"typ":"dpop+jwt"}"#
        self.encodedHeader = Base64URL.encode(Data(header.utf8))
    }

    /// The key as the token store keeps it.
    var pemRepresentation: String {
        switch self.signing {
        case .p256(let key): return key.pemRepresentation
        case .rsa(let key): return key.pemRepresentation
        case .ed25519(let key): return key.pemRepresentation
        }
    }

    /// Names the algorithm and the thumbprint, never the key.
    package var description: String {
        "DPoP key \(self.algorithm.rawValue) \(self.thumbprint)"
    }

    /// The compact JWS of `claims` (a JSON object) with the proof's header.
    func sign(claims: String) throws(Failure) -> String {
        let input = self.encodedHeader + "." + Base64URL.encode(Data(claims.utf8))
        let data = Data(input.utf8)
        let signature: Data
        do {
            switch self.signing {
            case .p256(let key):
                // JWS ES256 is R ‖ S, 64 bytes (RFC 7518 §3.4).
                signature = try key.signature(for: data).rawRepresentation
            case .rsa(let key):
                let padding: _RSA.Signing.Padding = self.algorithm == .ps256 ? .PSS : .insecurePKCS1v1_5
                signature = try key.signature(for: SHA256.hash(data: data), padding: padding).rawRepresentation
            case .ed25519(let key):
                signature = try key.signature(for: data)
            }
        } catch {
            throw Failure(description: "signing the DPoP proof failed")
        }
        return input + "." + Base64URL.encode(signature)
    }

    /// A big-endian integer without leading zero bytes (RFC 7518 §6.3.1: `n` and `e` are
    /// unsigned, minimal).
    private static func unsigned(_ bytes: Data) -> Data {
        let first = bytes.firstIndex(where: { $0 != 0 }) ?? bytes.endIndex
        return bytes[first...].isEmpty ? Data([0]) : Data(bytes[first...])
    }

    private static func kind(_ algorithm: DPoPAlgorithm) -> String {
        switch algorithm {
        case .es256: return "P-256"
        case .rs256, .ps256: return "RSA"
        case .edDSA: return "Ed25519"
        }
    }
}
