import Foundation
import Logging
import Testing

@testable import TokenProxyCredentials
@testable import TokenProxySupport

struct TokenResponseParserTests {
    @Test func aGoodAnswer() throws {
        let body = Array(
            #"{"access_token":"t","token_type":"bearer","expires_in":"120","refresh_token":"r","scope":"a"}"#.utf8
        )
        let token = try TokenResponseParser.parse(status: 200, body: body).get()
        #expect(
            token == TokenResponse(accessToken: "t", expiresIn: 120, refreshToken: "r", scope: "a", tokenType: "bearer")
        )
    }

    @Test func oauthErrorsArePermanentOrNot() {
        func error(_ status: Int, _ body: String) -> TokenEndpointError? {
            if case .failure(let error) = TokenResponseParser.parse(status: status, body: Array(body.utf8)) {
                return error
            }
            return nil
        }
        #expect(error(400, #"{"error":"invalid_grant"}"#)?.isPermanent == true)
        #expect(error(401, #"{"error":"invalid_client"}"#)?.isPermanent == true)
        #expect(error(400, #"{"error":"unauthorized_client"}"#)?.isPermanent == true)
        #expect(error(503, #"{"error":"temporarily_unavailable"}"#)?.isPermanent == false)
        #expect(error(429, #"{"error":"slow_down"}"#)?.isPermanent == false)
        #expect(error(502, "<html>bad gateway</html>")?.isPermanent == false)
    }

    /// RFC 9110 §15.5: a 4xx is the client's fault, and asking again the same way gets the
    /// same answer, whatever its body; only a server error, 408 and 429 may pass.
    @Test(arguments: [
        (403, ""), (400, "<html><body>Bad Request</body></html>"), (401, #"{"message":"bad credentials"}"#),
        (404, "not found"), (400, ""), (302, ""), (405, #"{"error":"something_new"}"#),
    ])
    func everyOtherClientErrorIsARefusal(status: Int, body: String) throws {
        let error = try #require(self.failure(status, body))
        #expect(error.isPermanent)
        #expect(error.status == status)
    }

    @Test(arguments: [
        (500, ""), (503, "<html>maintenance</html>"), (408, ""), (429, #"{"message":"slow down"}"#),
        (502, #"{"error":"server_error"}"#), (504, ""),
    ])
    func serverErrorsTimeoutsAndThrottlingAreRetried(status: Int, body: String) throws {
        let error = try #require(self.failure(status, body))
        #expect(!error.isPermanent)
        #expect(error.status == status)
    }

    private func failure(_ status: Int, _ body: String) -> TokenEndpointError? {
        if case .failure(let error) = TokenResponseParser.parse(status: status, body: Array(body.utf8)) {
            return error
        }
        return nil
    }

    @Test func formEncodingFollowsTheURLStandard() {
        #expect(FormEncoding.encode("a b+c/d:e&f=g~h*i-j.k_l") == "a+b%2Bc%2Fd%3Ae%26f%3Dg%7Eh*i-j.k_l")
        #expect(FormEncoding.encode("caf\u{e9}") == "caf%C3%A9")
        #expect(
            FormEncoding.encode([("grant_type", "client_credentials"), ("scope", "a b")])
                == "grant_type=client_credentials&scope=a+b"
        )
    }
}
