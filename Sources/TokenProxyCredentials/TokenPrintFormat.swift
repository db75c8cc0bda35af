import Foundation
import TokenProxyHTTP
import TokenProxySupport

/// How `tokenproxy token` prints the token it obtained (`docs/guide/scripts.md`): for
/// scripts that add the header themselves, or that want to know how long the token lives.
package enum TokenPrintFormat: String, CaseIterable, Sendable {
    /// The token alone.
    case raw
    /// The header line as the proxy would send it: `Authorization: Bearer …`, or the
    /// provider's own `header` and `format`.
    case header
    /// `{"access_token", "token_type", "expires_at"}`.
    case json

    /// The JSON form: `token_type` is the scheme of an `Authorization` format such as
    /// `Bearer {token}` (null for another header or format), `expires_at` the expiry in
    /// RFC 3339 UTC (null when the provider gave none).
    private struct JSONForm: Encodable {
        var accessToken: String
        var tokenType: String?
        var expiresAt: String?

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case tokenType = "token_type"
            case expiresAt = "expires_at"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.accessToken, forKey: .accessToken)
            // Present and null when unknown, so a reader finds every key.
            try container.encode(self.tokenType, forKey: .tokenType)
            try container.encode(self.expiresAt, forKey: .expiresAt)
        }
    }

    /// What to print for `token` of `provider`, without the final newline; an error when
    /// the token could not be sent in a header (a control character in it).
    package func render(
        _ token: AccessToken,
        formatter: CredentialFormatter,
        provider: String,
        now: (clock: ContinuousClock.Instant, wall: Date) = (.now, Date())
    ) -> Result<String, ProxyError> {
        let header: CredentialHeader
        switch formatter.header(for: token, provider: provider) {
        case .failure(let error): return .failure(error)
        case .success(let made): header = made
        }
        switch self {
        case .raw:
            return .success(token.value)
        case .header:
            return .success("\(header.name): \(header.value)")
        case .json:
            let form = JSONForm(
                accessToken: token.value,
                tokenType: Self.scheme(of: formatter),
                expiresAt: token.expiresAt.map {
                    Self.rfc3339(now.wall.addingTimeInterval(Self.seconds($0 - now.clock)))
                }
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
