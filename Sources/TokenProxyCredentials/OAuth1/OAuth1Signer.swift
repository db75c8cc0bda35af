import Crypto
import CryptoExtras
import Foundation
import TokenProxyConfiguration
import TokenProxySupport

/// Signs requests for OAuth 1.0a (RFC 5849 §3): the signature base string from the method,
/// the base string URI and the normalised parameters, the signature by the configured
/// method, and the `Authorization: OAuth …` header. Pure: the nonce and the timestamp come
/// in with each request, so tests can reproduce published examples and every real request
/// (a 401 replay included) is signed afresh.
struct OAuth1Signer: Sendable {
    /// What a signer signs with.
    struct Credentials: Sendable {
        /// `oauth_consumer_key`.
        var consumerKey: String
        /// The consumer secret (HMAC and PLAINTEXT methods).
        var consumerSecret: String
        /// `oauth_token`, absent while asking for a request token.
        var token: String?
        /// The token secret paired with `token` (HMAC and PLAINTEXT methods).
        var tokenSecret: String?
        /// The signature method.
        var method: OAuth1SignatureMethod
        /// The private key for `RSA-SHA1`.
        var rsaKey: _RSA.Signing.PrivateKey?
        /// The `realm` parameter of the header (RFC 5849 §3.5.1), not signed.
        var realm: String?
        /// Whether `oauth_version="1.0"` is sent (optional, §3.1; most providers expect it).
        var sendsVersion = true
    }

    /// The parts of one signature, for the request and for `tokenproxy sign`.
    struct Signature: Sendable, Equatable {
        /// The signature base string (§3.4.1.1).
        var baseString: String
        /// The normalised parameters (§3.4.1.3.2), each name and value already encoded.
        var parameters: [Parameter]
        /// The protocol parameters sent in the header, `oauth_signature` last.
        var protocolParameters: [Parameter]
        /// The `Authorization` header value.
        var header: String
        /// `oauth_signature` as computed (base64 for HMAC and RSA methods).
        var signature: String
    }

    /// A name and value pair.
    struct Parameter: Sendable, Equatable {
        /// The name.
        var name: String
        /// The value.
        var value: String
    }

    /// Why a request cannot be signed.
    struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// What went wrong; never contains a secret.
        var description: String
    }

    /// The credentials used.
    let credentials: Credentials

    /// Signs `method` on `url` (absolute, as it goes upstream) with `formBody` (the
    /// `application/x-www-form-urlencoded` body, or nil for another or no body), adding
    /// `extra` protocol parameters (`oauth_callback`, `oauth_verifier`).
    func sign(
        method: String,
        url: String,
        formBody: [UInt8]? = nil,
        nonce: String,
        timestamp: String,
        extra: [Parameter] = []
    ) throws(Failure) -> Signature {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = URLHost.written(in: url)?.lowercased(), !host.isEmpty
        else { throw Failure(description: "the URL to sign is not absolute") }

        var protocolParameters = [
            Parameter(name: "oauth_consumer_key", value: self.credentials.consumerKey),
            Parameter(name: "oauth_signature_method", value: self.credentials.method.rawValue),
            Parameter(name: "oauth_timestamp", value: timestamp),
            Parameter(name: "oauth_nonce", value: nonce),
        ]
        if self.credentials.sendsVersion {
            protocolParameters.append(Parameter(name: "oauth_version", value: "1.0"))
        }
        if let token = self.credentials.token {
            protocolParameters.insert(Parameter(name: "oauth_token", value: token), at: 1)
        }
        protocolParameters += extra

        // §3.4.1.3.1: the query and the form body as the client sent them, decoded once.
        // One that cannot be decoded cannot be signed as the server will read it.
        guard var requestParameters = Self.decodeForm(components.percentEncodedQuery ?? "") else {
            throw Failure(description: "the query is not a decodable form (a broken %-escape or not UTF-8)")
        }
        if let formBody {
            guard let text = String(validating: formBody, as: UTF8.self), let body = Self.decodeForm(text) else {
                throw Failure(description: "the form body is not decodable (a broken %-escape or not UTF-8)")
            }
            requestParameters += body
        }
        let parameters = Self.normalise(requestParameters + protocolParameters)
        let baseString = [
            Self.encode(method.uppercased()),
            Self.encode(
                Self.baseStringURI(
                    scheme: scheme,
                    host: host,
                    port: components.port,
                    path: components.percentEncodedPath
                )
            ),
            Self.encode(parameters.map { "\($0.name)=\($0.value)" }.joined(separator: "&")),
        ].joined(separator: "&")

        let signature = try self.signature(of: baseString)
        protocolParameters.append(Parameter(name: "oauth_signature", value: signature))
        var fields: [String] = []
        if let realm = self.credentials.realm {
            fields.append("realm=\"\(realm)\"")
        }
        fields += protocolParameters.map { "\(Self.encode($0.name))=\"\(Self.encode($0.value))\"" }
        return Signature(
            baseString: baseString,
            parameters: parameters,
            protocolParameters: protocolParameters,
            header: "OAuth " + fields.joined(separator: ", "),
            signature: signature
        )
    }

    /// The signature of `baseString` by the configured method (§3.4.2 to §3.4.4).
    private func signature(of baseString: String) throws(Failure) -> String {
        // §3.4.2: the key is the encoded consumer secret and token secret joined by "&",
        // present even when the token secret is empty.
        let key =
            Self.encode(self.credentials.consumerSecret) + "&" + Self.encode(self.credentials.tokenSecret ?? "")
        let message = Data(baseString.utf8)
        switch self.credentials.method {
        case .hmacSHA1:
            let code = HMAC<Insecure.SHA1>.authenticationCode(for: message, using: SymmetricKey(data: Data(key.utf8)))
            return Data(code).base64EncodedString()
        case .hmacSHA256:
            let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Data(key.utf8)))
            return Data(code).base64EncodedString()
        case .rsaSHA1:
            guard let rsaKey = self.credentials.rsaKey else {
                throw Failure(description: "RSA-SHA1 needs an RSA private key")
            }
            do {
                let signed = try rsaKey.signature(for: Insecure.SHA1.hash(data: message), padding: .insecurePKCS1v1_5)
                return signed.rawRepresentation.base64EncodedString()
            } catch {
                throw Failure(description: "the RSA key could not sign")
            }
        case .plaintext:
            return key
        }
    }

    /// The base string URI (§3.4.1.2): scheme and host in lower case, the port only when it
    /// is not the scheme's default, the path as sent ("/" when empty), no query or fragment.
    static func baseStringURI(scheme: String, host: String, port: Int?, path: String) -> String {
        var authority = host
        if let port, !(scheme == "http" && port == 80), !(scheme == "https" && port == 443) {
            authority += ":\(port)"
        }
        return "\(scheme)://\(authority)\(path.isEmpty ? "/" : path)"
    }

    /// §3.4.1.3.2: every name and value encoded, sorted by name and then by value (byte
    /// order of the encoded forms).
    static func normalise(_ parameters: [Parameter]) -> [Parameter] {
        parameters.map { Parameter(name: Self.encode($0.name), value: Self.encode($0.value)) }
            .sorted { lhs, rhs in
                lhs.name == rhs.name
                    ? Array(lhs.value.utf8).lexicographicallyPrecedes(rhs.value.utf8)
                    : Array(lhs.name.utf8).lexicographicallyPrecedes(rhs.name.utf8)
            }
    }

    /// `application/x-www-form-urlencoded` pairs decoded once (`+` is a space), in order;
    /// a name without `=` has an empty value (§3.4.1.3.1). Nil when ``FormEncoding`` cannot
    /// decode `text`.
    static func decodeForm(_ text: String) -> [Parameter]? {
        FormEncoding.decode(text)?.map { Parameter(name: $0.0, value: $0.1) }
    }

    /// §3.6: every byte of the UTF-8 form except the unreserved characters
    /// (`A-Z a-z 0-9 - . _ ~`) as `%XX` with upper-case hex.
    static func encode(_ value: String) -> String {
        PercentEncoding.encode(value, keeping: .unreserved)
    }

    /// A fresh nonce: 16 random bytes as hex, from the system's secure generator.
    static func nonce() -> String {
        SecureRandom.hex(16)
    }

    /// The current time in whole seconds since 1970, as `oauth_timestamp` wants it.
    static func timestamp(now: Date = Date()) -> String {
        String(Int(now.timeIntervalSince1970))
    }
}
