import Foundation
import Testing

@testable import TokenProxyCredentials
@testable import TokenProxySupport

/// The one form decoder (WHATWG URL standard's `application/x-www-form-urlencoded`, strict on
/// broken escapes and on bytes that are not UTF-8), and the callers that refuse a parameter
/// they read given twice.
struct FormEncodingTests {
    @Test(arguments: [
        ("a=1&b=2", [["a", "1"], ["b", "2"]]),
        ("a=x+y&b+c=%2B", [["a", "x y"], ["b c", "+"]]),
        ("a=%41%62%C3%a9", [["a", "Ab\u{e9}"]]),
        ("", []), ("&&a=1&", [["a", "1"]]),
        ("flag", [["flag", ""]]), ("empty=", [["empty", ""]]), ("=value", [["", "value"]]), ("=", [["", ""]]),
        ("a=b=c", [["a", "b=c"]]), ("a=1&a=2", [["a", "1"], ["a", "2"]]),
        ("snow=%E2%98%83", [["snow", "\u{2603}"]]), ("raw=\u{2603}", [["raw", "\u{2603}"]]),
        ("pct=%25", [["pct", "%"]]), ("amp=%26&eq=%3D", [["amp", "&"], ["eq", "="]]),
    ])
    func goodForms(form: String, pairs: [[String]]) {
        let decoded = FormEncoding.decode(form)?.map { [$0.0, $0.1] }
        #expect(decoded == pairs)
    }

    @Test(arguments: [
        "a=%FF", "a=%G1", "a=%", "a=%4", "a=1&b=%zz", "%=1", "a=%C3", "a=%C3%28", "a=%ED%A0%80",
        "access_token=A&access_token=%FF", "a%FF=1", "a=%%41", "a=%41%62%e9",
    ])
    func malformedFormsFailWhole(form: String) {
        #expect(FormEncoding.decode(form) == nil)
    }

    @Test func singleRefusesARepeatedName() throws {
        let pairs = try #require(FormEncoding.decode("a=1&b=2&b=3&c="))
        #expect(FormEncoding.single("a", in: pairs) == "1")
        #expect(FormEncoding.single("b", in: pairs) == nil)
        #expect(FormEncoding.single("c", in: pairs) == "")
        #expect(FormEncoding.single("d", in: pairs) == nil)
    }

    /// The case that let a second token through: the undecodable pair was dropped before the
    /// check for a repeated `access_token`.
    @Test(arguments: [
        "access_token=A&access_token=%FF", "access_token=A&access_token=B", "access_token=A&x=%G1",
        "access_token=A%", "access_token=A&access_token=",
    ])
    func aTokenAnswerThatCannotBeReadWholeIsRefused(body: String) {
        let result = TokenResponseParser.parse(
            status: 200,
            body: Array(body.utf8),
            contentType: "application/x-www-form-urlencoded"
        )
        guard case .failure(let error) = result else {
            Issue.record("accepted \(body)")
            return
        }
        #expect(error.isPermanent)
    }

    @Test func aLoopbackCallbackWithABrokenEscapeIsRefused() {
        #expect(FormEncoding.decode("code=abc&state=%FF") == nil)
        #expect(FormEncoding.decode("oauth_token=t&oauth_verifier=%") == nil)
    }

    @Test func anOAuth1FormThatCannotBeDecodedIsNotSigned() throws {
        #expect(OAuth1Signer.decodeForm("a=%FF") == nil)
        #expect(try #require(OAuth1Signer.decodeForm("a=b+c")).map(\.value) == ["b c"])
    }
}
