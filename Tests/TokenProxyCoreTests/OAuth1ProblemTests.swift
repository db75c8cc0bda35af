import Crypto
import Foundation
import Testing

@testable import TokenProxyCredentials

/// What an `oauth1` route does with a provider's 401 (`docs/guide/oauth1.md`).
struct OAuth1ProblemTests {
    private static let provider = """
        {"grant": "oauth1", "consumer_key": "ck", "consumer_secret": "cs", "token": "tk", "token_secret": "ts"}
        """

    /// A problem with the token itself: no replay, 401 `login_required` naming the problem,
    /// no secret in the answer.
    @Test(arguments: ["token_rejected", "token_revoked", "token_expired", "token_used"])
    func aRefusedTokenMeansLoginRequired(problem: String) throws {
        let fixture = try ForwardingFixture(provider: Self.provider)
        let response = try fixture.client().get("/api/oauth-problem/\(problem)")
        #expect(response.status == 401)
        #expect(response.header("X-Tokenproxy-Error") == "login_required")
        #expect(response.bodyText.contains("oauth_problem=\(problem)"))
        #expect(!response.bodyText.contains("\"cs\"") && !response.bodyText.contains("ts\""))
        #expect(fixture.upstream.requests.count == 1)
    }

    /// A refused timestamp or nonce is replayed once, signed with a fresh nonce; the second
    /// refusal is relayed as the provider sent it.
    @Test(arguments: ["timestamp_refused", "nonce_used"])
    func aRefusedTimestampOrNonceIsSignedAgain(problem: String) throws {
        let fixture = try ForwardingFixture(provider: Self.provider)
        let response = try fixture.client().get("/api/oauth-problem/\(problem)")
        #expect(response.status == 401)
        #expect(response.header("X-Tokenproxy-Error") == nil)
        #expect(response.header("WWW-Authenticate")?.contains(problem) == true)
        let sent = fixture.upstream.requests.compactMap { $0.headers.first("Authorization") }
        #expect(sent.count == 2)
        #expect(sent.allSatisfy { $0.hasPrefix("OAuth ") })
        let nonces = sent.compactMap { header in
            header.split(separator: ",").first { $0.contains("oauth_nonce=") }
        }
        #expect(Set(nonces).count == 2)
    }

    /// A form body is read whole to be signed, so the replay sends it again, signed anew.
    @Test func aRefusedNonceOnAFormPostIsReplayedWithItsBody() throws {
        let fixture = try ForwardingFixture(provider: Self.provider)
        let client = try fixture.client()
        let body = "status=hello+world&x=1"
        try client.send(
            "POST /api/oauth-problem/nonce_used HTTP/1.1\r\nHost: localhost\r\n"
                + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
        )
        let response = try client.readResponse()
        #expect(response.status == 401)
        let requests = fixture.upstream.requests
        #expect(requests.count == 2)
        let digest = SHA256.hash(data: Data(body.utf8)).map { String(format: "%02x", $0) }.joined()
        #expect(requests.allSatisfy { $0.bodyLength == body.utf8.count && $0.bodySHA256 == digest })
        let nonces = requests.compactMap { request in
            request.headers.first("Authorization")?.split(separator: ",").first { $0.contains("oauth_nonce=") }
        }
        #expect(Set(nonces).count == 2)
    }

    @Test func problemNamesAreReadFromTheChallengeOnly() {
        #expect(OAuth1Problem.named(in: [#"OAuth realm="x", oauth_problem="token_rejected""#]) == "token_rejected")
        #expect(OAuth1Problem.named(in: [#"OAuth oauth_problem=nonce_used, realm="x""#]) == "nonce_used")
        #expect(OAuth1Problem.named(in: [#"OAuth oauth_problem="<script>""#]) == nil)
        #expect(OAuth1Problem.named(in: [#"Bearer error="invalid_token""#]) == nil)
    }
}
