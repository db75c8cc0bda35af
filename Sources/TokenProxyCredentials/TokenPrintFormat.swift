import Foundation
import TokenProxyHTTP
import TokenProxySupport

/// How `tokenproxy token` prints the token it obtained (`docs/guide/scripts.md`): for
/// scripts that add the header themselves, or that want to know how long the token lives.
package enum TokenPrintFormat: String, CaseIterable, Sendable {
    /// The token alone.
    case raw
    /// The header line as the proxy would send it: `Authorization: Bearer …`, or the
    /// provider's own `header` and `format`; for a DPoP-bound token, `Authorization: DPoP …`
    /// and a `DPoP` proof line for the request named.
    case header
    /// `{"access_token", "token_type", "expires_at"}`; for a DPoP-bound token also `jkt`,
    /// and `dpop`, a proof for the request named.
    case json

    /// The JSON form: `token_type` is the scheme of an `Authorization` format such as
    /// `Bearer {token}` (null for another header or format), `expires_at` the expiry in
    /// RFC 3339 UTC (null when the provider gave none).
    private struct JSONForm: Encodable {
        var accessToken: String
        var tokenType: String?
        var expiresAt: String?
        var thumbprint: String?
        var proof: String?

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case tokenType = "token_type"
            case expiresAt = "expires_at"
            case thumbprint = "jkt"
            case proof = "dpop"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.accessToken, forKey: .accessToken)
            // Present and null when unknown, so a reader finds every key.
            try container.encode(self.tokenType, forKey: .tokenType)
            try container.encode(self.expiresAt, forKey: .expiresAt)
            try container.encodeIfPresent(self.thumbprint, forKey: .thumbprint)
            try container.encodeIfPresent(self.proof, forKey: .proof)
        }
    }

    /// The request a DPoP proof is made for (`--method`, `--url`).
    package struct ProofRequest: Sendable {
        package var method: String
        package var url: String

        package init(method: String, url: String) {
            self.method = method
            self.url = url
        }
    }

    /// What to print for `token` of `provider`, without the final newline; an error when
    /// the token could not be sent in a header (a control character in it).
    /// For a DPoP-bound token, `request` is what the proof is made for; `header` needs it.
    package func render(
        _ token: AccessToken,
        formatter: CredentialFormatter,
        provider: String,
        request: ProofRequest? = nil,
        now: (clock: ContinuousClock.Instant, wall: Date) = (.now, Date())
    ) -> Result<String, ProxyError> {
        var header: CredentialHeader
        switch formatter.header(for: token, provider: provider) {
        case .failure(let error): return .failure(error)
        case .success(let made): header = made
        }
        var proof: String?
        if let binding = token.binding {
            header = CredentialHeader(name: "Authorization", value: "DPoP " + token.value)
            if let request {
                switch binding.proof(method: request.method, url: request.url, accessToken: token.value) {
                case .success(let made): proof = made
                case .failure(let failure):
                    return .failure(ProxyError(.tokenUnavailable, failure.description, provider: provider))
                }
            } else if self == .header {
                return .failure(
                    ProxyError(
                        .badRequest,
                        "the token is bound to a DPoP key: --url (and --method) name the request its proof is for",
                        provider: provider
                    )
                )
            }
        }
        switch self {
        case .raw:
            return .success(token.value)
        case .header:
            return .success("\(header.name): \(header.value)" + (proof.map { "\nDPoP: \($0)" } ?? ""))
        case .json:
            let form = JSONForm(
                accessToken: token.value,
                tokenType: token.binding == nil ? Self.scheme(of: formatter) : "DPoP",
                expiresAt: token.expiresAt.map {
                    Self.rfc3339(now.wall.addingTimeInterval(Self.seconds($0 - now.clock)))
                },
                thumbprint: token.binding?.key.thumbprint,
                proof: proof
            )
            var bytes = JSONOutput.encode(form)
            bytes.removeLast()
            return .success(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// `Bearer` for an `Authorization` header whose format is `Bearer {token}`; nil otherwise.
    private static func scheme(of formatter: CredentialFormatter) -> String? {
        guard formatter.header.lowercased() == "authorization", formatter.format.hasSuffix(" {token}") else {
            return nil
        }
        let scheme = formatter.format.dropLast(" {token}".count)
        guard !scheme.isEmpty, HTTPGrammar.isToken(scheme.utf8) else { return nil }
        return String(scheme)
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.milliseconds) / 1000
    }

    private static func rfc3339(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
