import Foundation

/// Keeping the secrets a request carried out of what is made from its answer: some
/// authorization servers repeat a refused refresh token, a code or the request's own
/// Authorization header in `error_description`, and that text reaches error bodies, logs,
/// `tokenproxy status` and the login page (`docs/reference/security.md`).
///
/// A secret is taken out in every form a server may echo it in: as sent, form-encoded
/// (`+` for a space), percent-encoded, JSON-escaped and base64-encoded (HTTP Basic carries
/// `base64(client_id:client_secret)`, RFC 6749 §2.3.1, RFC 7617 §2).
package enum Redaction {
    /// Form parameters whose values are secrets.
    static let secretParameters: Set<String> = [
        "refresh_token", "code", "code_verifier", "password", "assertion", "client_assertion", "client_secret",
        "subject_token", "actor_token", "device_code", "token",
    ]

    /// The text a secret is replaced with.
    static let placeholder = "[redacted]"

    /// The secret values in a form-encoded body, and the client secret.
    package static func secrets(inForm body: [UInt8]?, clientSecret: String?) -> [String] {
        // The body is one the proxy encoded, so it decodes.
        var secrets = (FormEncoding.decode(String(decoding: body ?? [], as: UTF8.self)) ?? [])
            .filter { self.secretParameters.contains($0.0) }
            .map(\.1)
        if let clientSecret { secrets.append(clientSecret) }
        return secrets
    }

    /// The HTTP Basic credentials `client_secret_basic` makes of `clientID` and `secret`
    /// (form-encoded first, RFC 6749 §2.3.1) and the plain `id:secret` pair (RFC 7617 §2),
    /// so that an echoed Authorization header is recognised in every form.
    package static func basicCredentials(clientID: String, secret: String) -> [String] {
        [
            FormEncoding.encode(clientID) + ":" + FormEncoding.encode(secret),
            clientID + ":" + secret,
        ]
    }

    /// `text` with every secret of at least four characters, and each of its encoded forms,
    /// replaced by `[redacted]`, the longest first (one secret may contain another).
    package static func redact(_ text: String, _ secrets: [String]) -> String {
        var text = text
        let forms = Set(secrets.filter { $0.count >= 4 }.flatMap(Self.forms))
        for form in forms.filter({ $0.count >= 4 }).sorted(by: { $0.count > $1.count }) {
            text = text.replacingOccurrences(of: form, with: self.placeholder)
        }
        return text
    }

    /// The ways `secret` may appear in a server's text.
    static func forms(_ secret: String) -> [String] {
        let bytes = Data(secret.utf8)
        var forms = [
            secret,
            FormEncoding.encode(secret),
            self.percentEncoded(secret, uppercase: true),
            self.percentEncoded(secret, uppercase: false),
            bytes.base64EncodedString(),
            // Unpadded and URL-safe base64 (RFC 4648 §5), as JWTs and some servers print it.
            bytes.base64EncodedString().trimmingCharacters(in: CharacterSet(charactersIn: "=")),
            bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").trimmingCharacters(in: CharacterSet(charactersIn: "=")),
        ]
        if let json = try? JSONSerialization.data(withJSONObject: [secret]),
            let text = String(data: json, encoding: .utf8), text.count >= 4
        {
            // `["…"]`: the escaped string between the brackets and quotes.
            forms.append(String(text.dropFirst(2).dropLast(2)))
            forms.append(String(text.dropFirst(2).dropLast(2)).replacingOccurrences(of: "\\/", with: "/"))
        }
        // A form-encoded pair decoded as a query: `+` stays literal in some echoes.
        forms.append(secret.replacingOccurrences(of: " ", with: "+"))
        return forms
    }

    /// Every byte but the unreserved ones (RFC 3986 §2.3) as `%XX`.
    private static func percentEncoded(_ text: String, uppercase: Bool) -> String {
        PercentEncoding.encode(text, keeping: .unreserved, uppercase: uppercase)
    }
}
