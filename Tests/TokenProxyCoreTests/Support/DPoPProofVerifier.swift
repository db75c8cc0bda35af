import Crypto
import CryptoExtras
import Foundation

/// Checks a DPoP proof as a server does (RFC 9449 §4.3), written apart from the proxy's
/// code: the JWS is split and its signature verified with the public key in its own
/// header, the claims are compared with the request, and the key's thumbprint (RFC 7638) is
/// computed from the header's `jwk`.
enum DPoPProofVerifier {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    struct Proof {
        var header: [String: Any]
        var claims: [String: Any]
        /// base64url(SHA-256) of the canonical public JWK.
        var thumbprint: String
        var jti: String { self.claims["jti"] as? String ?? "" }
        var nonce: String? { self.claims["nonce"] as? String }
    }

    static func verify(_ jws: String, method: String, url: String, accessToken: String?) throws -> Proof {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = decode(parts[0]), let claimsData = decode(parts[1]),
            let signature = decode(parts[2]),
            let header = try JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else { throw Failure(description: "not a compact JWS of JSON objects") }
        guard header["typ"] as? String == "dpop+jwt" else { throw Failure(description: "typ is not dpop+jwt") }
        guard let jwk = header["jwk"] as? [String: String], let alg = header["alg"] as? String else {
            throw Failure(description: "no jwk or alg")
        }
        guard jwk["d"] == nil, jwk["p"] == nil else { throw Failure(description: "the jwk holds a private key") }
        let input = Data(parts[0].utf8) + Data(".".utf8) + Data(parts[1].utf8)
        guard try Self.signatureIsValid(signature, of: input, alg: alg, jwk: jwk) else {
            throw Failure(description: "the signature does not verify")
        }
        guard claims["htm"] as? String == method else { throw Failure(description: "htm \(claims["htm"] ?? "")") }
        guard claims["htu"] as? String == url else { throw Failure(description: "htu \(claims["htu"] ?? "")") }
        guard let iat = claims["iat"] as? Int, abs(Double(iat) - Date().timeIntervalSince1970) < 60 else {
            throw Failure(description: "iat is not now")
        }
        guard let jti = claims["jti"] as? String, jti.count >= 16 else { throw Failure(description: "no jti") }
        if let accessToken {
            let ath = base64URL(Data(SHA256.hash(data: Data(accessToken.utf8))))
            guard claims["ath"] as? String == ath else { throw Failure(description: "ath does not match the token") }
        } else if claims["ath"] != nil {
            throw Failure(description: "ath without a token")
        }
        return Proof(header: header, claims: claims, thumbprint: try Self.thumbprint(jwk))
    }

    /// RFC 7638 §3: the required members in lexicographic order, no white space.
    static func thumbprint(_ jwk: [String: String]) throws -> String {
        let required: [String]
        switch jwk["kty"] {
        case "EC": required = ["crv", "kty", "x", "y"]
        case "RSA": required = ["e", "kty", "n"]
        case "OKP": required = ["crv", "kty", "x"]
        default: throw Failure(description: "unknown kty")
        }
        let members = try required.map { name -> String in
            guard let value = jwk[name] else { throw Failure(description: "jwk lacks \(name)") }
            return "\"\(name)\":\"\(value)\""
        }
        let canonical = "{" + members.joined(separator: ",") + "}"
        return base64URL(Data(SHA256.hash(data: Data(canonical.utf8))))
    }

    private static func signatureIsValid(_ signature: Data, of input: Data, alg: String, jwk: [String: String])
        throws -> Bool
    {
        switch alg {
        case "ES256":
            guard jwk["kty"] == "EC", jwk["crv"] == "P-256", let x = jwk["x"].flatMap(decode),
                let y = jwk["y"].flatMap(decode)
            else { throw Failure(description: "ES256 needs a P-256 jwk") }
            let key = try P256.Signing.PublicKey(x963Representation: Data([4]) + x + y)
            return key.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: signature), for: input)
        case "RS256", "PS256":
            guard jwk["kty"] == "RSA", let n = jwk["n"].flatMap(decode), let e = jwk["e"].flatMap(decode) else {
                throw Failure(description: "\(alg) needs an RSA jwk")
            }
            let key = try _RSA.Signing.PublicKey(n: n, e: e)
            let padding: _RSA.Signing.Padding = alg == "PS256" ? .PSS : .insecurePKCS1v1_5
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature),
                for: SHA256.hash(data: input),
                padding: padding
            )
        case "EdDSA":
            guard jwk["kty"] == "OKP", jwk["crv"] == "Ed25519", let x = jwk["x"].flatMap(decode) else {
                throw Failure(description: "EdDSA needs an Ed25519 jwk")
            }
            return try Curve25519.Signing.PublicKey(rawRepresentation: x).isValidSignature(signature, for: input)
        default:
            throw Failure(description: "unexpected alg \(alg)")
        }
    }

    static func decode(_ text: some StringProtocol) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
