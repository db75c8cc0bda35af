import Foundation

/// Keeping the secrets a request carried out of what is made from its answer: some
/// authorization servers repeat a refused refresh token or code in `error_description`,
/// and that text reaches error bodies, logs, `tokenproxy status` and the login page
/// (SPEC "Behaviour" 8).
enum Redaction {
    /// Form parameters whose values are secrets.
    static let secretParameters: Set<String> = [
        "refresh_token", "code", "code_verifier", "password", "assertion", "client_assertion", "client_secret",
        "subject_token", "actor_token", "device_code", "token",
    ]

    /// The secret values in a form-encoded body, and the client secret.
    static func secrets(inForm body: [UInt8]?, clientSecret: String?) -> [String] {
        var secrets = FormEncoding.decode(String(decoding: body ?? [], as: UTF8.self))
            .filter { self.secretParameters.contains($0.0) }
            .map(\.1)
        if let clientSecret { secrets.append(clientSecret) }
        return secrets
    }

    /// `text` with every secret of at least four characters replaced by `[redacted]`, the
    /// longest first (one secret may contain another).
    static func redact(_ text: String, _ secrets: [String]) -> String {
        var text = text
        for secret in secrets.filter({ $0.count >= 4 }).sorted(by: { $0.count > $1.count }) {
            text = text.replacingOccurrences(of: secret, with: "[redacted]")
        }
        return text
    }
}
