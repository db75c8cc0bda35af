import Foundation
import Testing

@testable import TokenProxyCredentials
@testable import TokenProxyHTTP
@testable import TokenProxySupport
@testable import TokenProxyUpstream

/// Numbers of seconds from outside the process: read strictly, clamped before any conversion.
struct BoundedSecondsTests {
    @Test(arguments: ["1e300", "infinity", "inf", "nan", "NaN", "-5", "5.5", "0x10", "", "soon", "1 2"])
    func retryAfterThatIsNeitherDigitsNorADateIsIgnored(value: String) {
        #expect(BoundedSeconds.retryAfter(value) == nil)
    }

    @Test func retryAfterDeltaSecondsIsReadAndClamped() {
        #expect(BoundedSeconds.retryAfter("120") == 120)
        #expect(BoundedSeconds.retryAfter(" 0 ") == 0)
        #expect(BoundedSeconds.retryAfter(String(repeating: "9", count: 400)) == BoundedSeconds.maximum)
        #expect(BoundedSeconds.retryAfter("99999999999999999999999") == BoundedSeconds.maximum)
    }

    @Test func retryAfterHTTPDatesInAllThreeFormsAreReadAndClamped() throws {
        let now = try #require(BoundedSeconds.httpDate("Sun, 06 Nov 1994 08:49:37 GMT"))
        #expect(BoundedSeconds.retryAfter("Sun, 06 Nov 1994 08:50:37 GMT", now: now) == 60)
        #expect(BoundedSeconds.retryAfter("Sunday, 06-Nov-94 08:51:37 GMT", now: now) == 120)
        #expect(BoundedSeconds.retryAfter("Sun Nov  6 08:52:37 1994", now: now) == 180)
        #expect(BoundedSeconds.retryAfter("Thu, 01 Jan 1970 00:00:00 GMT", now: now) == 0)
        #expect(BoundedSeconds.retryAfter("Fri, 31 Dec 9999 23:59:59 GMT", now: now) == BoundedSeconds.maximum)
    }

    @Test func durationsAreFiniteAndClamped() {
        let maximum = BoundedSeconds.duration(BoundedSeconds.maximum)
        #expect(BoundedSeconds.duration(.nan) == .zero)
        #expect(BoundedSeconds.duration(-5) == .zero)
        #expect(BoundedSeconds.duration(-.infinity) == .zero)
        #expect(BoundedSeconds.duration(.infinity) == maximum)
        #expect(BoundedSeconds.duration(1e300) == maximum)
        #expect(BoundedSeconds.duration(.greatestFiniteMagnitude, atMost: .infinity) == maximum)
        #expect(BoundedSeconds.duration(1.5) == .milliseconds(1500))
        #expect(BoundedSeconds.duration(90, atMost: 60) == .seconds(60))
    }

    @Test func jsonNumbersMustBeFiniteNumbersOrDecimalStrings() {
        #expect(BoundedSeconds.number(NSNumber(value: 3600)) == 3600)
        #expect(BoundedSeconds.number("3600") == 3600)
        #expect(BoundedSeconds.number("1.5") == 1.5)
        for value: Any in ["nan", "inf", "infinity", "0x10", " 5", "1e400", NSNumber(value: Double.nan), [1], "five"] {
            #expect(BoundedSeconds.number(value) == nil, "\(value)")
        }
    }

    @Test(arguments: [
        "1e300", "-5", "0", "-0.5", "\"nan\"", "\"NaN\"", "\"infinity\"", "\"1e300\"", "99999999999999999999999",
        "316224001", "\"abc\"", "[]", "{}",
    ])
    func absurdExpiresInIsAFailure(value: String) {
        let body = #"{"access_token": "tok", "token_type": "Bearer", "expires_in": \#(value)}"#
        guard case .failure(let error) = TokenResponseParser.parse(status: 200, body: Array(body.utf8)) else {
            Issue.record("expires_in \(value) was accepted")
            return
        }
        #expect(error.isPermanent)
    }

    @Test(arguments: [("3600", 3600.0), ("\"3600\"", 3600.0), ("0.5", 0.5), ("315360000", 315_360_000.0)])
    func sensibleExpiresInIsRead(value: String, expected: Double) throws {
        let body = #"{"access_token": "tok", "expires_in": \#(value)}"#
        let token = try TokenResponseParser.parse(status: 200, body: Array(body.utf8)).get()
        #expect(token.expiresIn == expected)
    }

    @Test func deviceAuthorizationNumbersAreClampedAndSlowDownIsBounded() throws {
        for (interval, expiresIn) in [("1e300", "1e300"), ("-5", "-5"), ("\"nan\"", "\"inf\""), ("[]", "{}")] {
            let body = """
                {"device_code": "d", "user_code": "u", "verification_uri": "https://v",
                 "interval": \(interval), "expires_in": \(expiresIn)}
                """
            let response = UpstreamResponse(status: 200, headers: HTTPHeaders(), body: Array(body.utf8))
            let parsed = try DeviceAuthorization.parse(response).get()
            #expect((1...60).contains(parsed.interval ?? 5))
            #expect((10...86400).contains(parsed.prompt.expiresIn))
        }
        // A number JSON cannot hold is not a JSON answer: a clean failure.
        let overflow = #"{"device_code": "d", "user_code": "u", "verification_uri": "https://v", "interval": 1e999}"#
        let response = UpstreamResponse(status: 200, headers: HTTPHeaders(), body: Array(overflow.utf8))
        guard case .failure = DeviceAuthorization.parse(response) else {
            Issue.record("an interval of 1e999 was read")
            return
        }
        var machine = DevicePollingStateMachine(interval: .infinity, lifetime: .infinity)
        for _ in 0..<10_000 {
            _ = machine.next(after: .error("slow_down", description: nil), elapsed: 0)
        }
        #expect(machine.interval == DevicePollingStateMachine.maximumInterval)
    }

    @Test(arguments: [
        "bad\r\nX-Injected: 1", "bad\ntoken", "nul\u{0}token", "tab\ttoken", " leading", "trailing ", "del\u{7F}",
        "caf\u{E9}", "",
    ])
    func tokensAHeaderCannotCarryAreRefusedWhenReceived(token: String) throws {
        #expect(TokenSyntax.problem(token) != nil)
        let json = String(decoding: try JSONSerialization.data(withJSONObject: ["access_token": token]), as: UTF8.self)
        guard case .failure = TokenResponseParser.parse(status: 200, body: Array(json.utf8)) else {
            Issue.record("the token endpoint's token was accepted")
            return
        }
        guard case .failure = CommandOutputParser.parse(Data(json.utf8)) else {
            Issue.record("the command's JSON token was accepted")
            return
        }
    }

    @Test func ordinaryTokensAreAccepted() {
        for token in ["issued-1", "ya29.a0Af-_~+/=", "eyJhbGciOi.eyJzdWIi.sig", "with inner space"] {
            #expect(TokenSyntax.problem(token) == nil, "\(token)")
        }
    }
}
