import Foundation
import Logging
import Testing

@testable import TokenProxyCore

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

    @Test func formEncodingFollowsTheURLStandard() {
        #expect(FormEncoding.encode("a b+c/d:e&f=g~h*i-j.k_l") == "a+b%2Bc%2Fd%3Ae%26f%3Dg%7Eh*i-j.k_l")
        #expect(FormEncoding.encode("caf\u{e9}") == "caf%C3%A9")
        #expect(
            FormEncoding.encode([("grant_type", "client_credentials"), ("scope", "a b")])
                == "grant_type=client_credentials&scope=a+b"
        )
    }
}
