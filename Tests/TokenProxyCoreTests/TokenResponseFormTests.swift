import Foundation
import Testing

@testable import TokenProxyCredentials

/// Token endpoint answers in `application/x-www-form-urlencoded`, read by their
/// `Content-Type` with the same checks as JSON answers.
struct TokenResponseFormTests {
    private func parse(_ body: String, type: String? = "application/x-www-form-urlencoded", status: Int = 200)
        -> Result<TokenResponse, TokenEndpointError>
    {
        TokenResponseParser.parse(status: status, body: Array(body.utf8), contentType: type)
    }

    @Test func aFormAnswerIsAToken() throws {
        let token = try self.parse("access_token=e72e16c7e42f292c&scope=repo%2Cgist&token_type=bearer").get()
        #expect(token.accessToken == "e72e16c7e42f292c")
        #expect(token.scope == "repo,gist")
        #expect(token.expiresIn == nil)
    }

    @Test(arguments: [
        "application/x-www-form-urlencoded", "Application/X-WWW-Form-URLEncoded",
        "application/x-www-form-urlencoded; charset=utf-8", " application/x-www-form-urlencoded ;charset=UTF-8",
    ])
    func theMediaTypeIsMatchedWithoutCaseOrParameters(type: String) throws {
        #expect(try self.parse("access_token=abc&expires_in=60", type: type).get().expiresIn == 60)
    }

    @Test func plusAndPercentEncodingAreDecoded() throws {
        let token = try self.parse("access_token=a%2Bb%2Fc%3D&refresh_token=r+1&scope=read+write").get()
        #expect(token.accessToken == "a+b/c=")
        #expect(token.scope == "read write")
        #expect(token.refreshToken == "r 1")
    }

    /// `expires` (older Facebook Graph versions) counts only when `expires_in` is absent, in
    /// form and JSON answers alike.
    @Test func expiresIsReadOnlyWithoutExpiresIn() throws {
        #expect(try self.parse("access_token=abc&expires=5108").get().expiresIn == 5108)
        #expect(try self.parse("access_token=abc&expires=5108&expires_in=60").get().expiresIn == 60)
        let json = TokenResponseParser.parse(
            status: 200,
            body: Array(#"{"access_token": "abc", "expires": 300}"#.utf8),
            contentType: "application/json"
        )
        #expect(try json.get().expiresIn == 300)
    }

    @Test func errorAnswersCarryTheOAuthFields() {
        guard case .failure(let error) = self.parse("error=bad_verification_code&error_description=The+code+is+wrong")
        else {
            Issue.record("an error answer was taken as a token")
            return
        }
        #expect(error.error == "bad_verification_code")
        #expect(error.description == "The code is wrong")
        #expect(error.isPermanent)
    }

    @Test(arguments: [
        "", "expires_in=60", "access_token=", "access_token=a%0Ab", "access_token=abc&expires_in=1e300",
        "access_token=abc&expires_in=-5", "access_token=abc&expires_in=forever", "access_token=abc&token_type=mac",
        "access_token=abc&access_token=def", "access_token=%20abc",
    ])
    func hostileFormAnswersAreRefused(body: String) {
        guard case .failure = self.parse(body) else {
            Issue.record("\(body) was accepted")
            return
        }
    }

    /// Without a form `Content-Type` the answer is JSON, as before.
    @Test func otherTypesAreReadAsJSON() {
        guard case .failure(let error) = self.parse("access_token=abc", type: "text/plain") else {
            Issue.record("a form body was read without the form type")
            return
        }
        #expect(error.problem == "answer is not a JSON object")
    }

    /// Through the proxy: the token of a form answer reaches the upstream.
    @Test func aFormAnsweringEndpointServesTheProxy() throws {
        let fixture = try OAuthFixture { auth in
            auth.enqueue(
                .init(
                    status: 200,
                    body: "access_token=form-token-1&token_type=bearer&expires_in=3600",
                    headers: [("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")]
                )
            )
        }
        #expect(try fixture.get().status == 200)
        #expect(fixture.forwarding.upstream.requests.first?.headers.first("Authorization") == "Bearer form-token-1")
    }
}
