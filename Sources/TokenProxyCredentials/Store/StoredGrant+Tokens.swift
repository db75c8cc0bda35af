import Crypto
import Foundation
import TokenProxyConfiguration
import TokenProxySupport

extension StoredGrant {
    /// The stored access token as the proxy holds tokens (expiry and the time it was
    /// obtained on the monotonic clock), if there is one and it is still valid `skew` seconds
    /// from `now` (at most half its lifetime, ``AccessToken/refreshSkew(_:lifetime:)``).
    func freshAccessToken(skew: Double, now: Date = Date()) -> AccessToken? {
        // A hand-edited store may hold anything: a value a header cannot carry is not used.
        guard let value = self.accessToken, TokenSyntax.problem(value) == nil else { return nil }
        guard let expiresAt = self.expiresAt else { return AccessToken(value: value) }
        let remaining = expiresAt.timeIntervalSince(now)
        guard remaining.isFinite else { return nil }
        var skew = BoundedSeconds.duration(skew)
        var obtainedAt: ContinuousClock.Instant?
        if let obtained = self.obtainedAt {
            let lifetime = expiresAt.timeIntervalSince(obtained)
            let age = now.timeIntervalSince(obtained)
            if lifetime.isFinite, lifetime > 0, age.isFinite, age >= 0 {
                skew = AccessToken.refreshSkew(skew, lifetime: BoundedSeconds.duration(lifetime))
                obtainedAt = .now - BoundedSeconds.duration(age)
            }
        }
        guard BoundedSeconds.duration(max(0, remaining)) > skew else { return nil }
        return AccessToken(value: value, expiresAt: .now + BoundedSeconds.duration(remaining), obtainedAt: obtainedAt)
    }

    /// The record for a token endpoint answer to a request sent at `sentAt`: expiry counts
    /// from the send time; a refresh token not renewed in the answer is kept (RFC 6749 §6).
    static func issued(
        _ issued: TokenEndpointClient.Issued,
        defaultExpiresIn: Double?,
        previousRefreshToken: String?,
        fingerprint: String
    ) -> StoredGrant {
        let sentAt = Date().addingTimeInterval(-Double((ContinuousClock.now - issued.sentAt).milliseconds) / 1000)
        let lifetime = issued.response.expiresIn ?? defaultExpiresIn
        return StoredGrant(
            accessToken: issued.response.accessToken,
            tokenType: issued.response.tokenType,
            expiresAt: lifetime.map { sentAt.addingTimeInterval(BoundedSeconds.clamp($0)) },
            refreshToken: issued.response.refreshToken ?? previousRefreshToken,
            scope: issued.response.scope,
            obtainedAt: sentAt,
            configFingerprint: fingerprint
        )
    }
}

extension ProviderConfiguration {
    /// SHA-256 over the settings that decide which tokens a provider gets: tokens stored under
    /// a different fingerprint belong to another client, endpoint, user or scope set and are
    /// not used. The configured refresh token seed is part of it, so a new seed starts over.
    func tokenFingerprint() -> String {
        let seed = (try? self.refreshToken?.resolve()).flatMap { $0 }
        var fields: [String?] = [
            self.grant.rawValue, self.issuer, self.tokenURL, self.clientID, self.scopes.sorted().joined(separator: " "),
            self.audience, self.resource, self.username, self.subject, self.issuerClaim, self.serviceAccountFile,
            seed.map { Hex.encode(SHA256.hash(data: Data($0.utf8))) },
        ]
        if let dpop = self.dpop {
            // A token bound to one key is of no use with another (RFC 9449 §6): a configured
            // key counts by its contents, a generated one lives in the record itself.
            // The key counts by its thumbprint, so another encoding of it (PKCS#8 for SEC 1)
            // keeps the tokens.
            let pem = (try? dpop.key?.resolve()).flatMap { $0 }
            let key = pem.map { pem in
                (try? DPoPKey(pem: pem, algorithm: dpop.algorithm).thumbprint)
                    ?? Hex.encode(SHA256.hash(data: Data(pem.utf8)))
            }
            fields += ["dpop " + dpop.algorithm.rawValue, key]
        }
        if self.grant == .oauth1 {
            // An OAuth 1 token belongs to one consumer at one provider.
            fields += [self.consumerKey, self.requestTokenURL, self.accessTokenURL]
        }
        let joined = fields.map { $0.map { "+" + $0 } ?? "-" }.joined(separator: "\n")
        return Hex.encode(SHA256.hash(data: Data(joined.utf8)))
    }
}
