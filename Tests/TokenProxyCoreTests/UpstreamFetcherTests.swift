import Crypto
import Foundation
import Testing

@testable import TokenProxyHTTP
@testable import TokenProxySupport
@testable import TokenProxyUpstream

private func fetch(_ request: UpstreamFetcher.Request) -> Result<UpstreamResponse, ProxyError> {
    let result = Locked<Result<UpstreamResponse, ProxyError>?>(nil)
    let done = DispatchSemaphore(value: 0)
    UpstreamFetcher(engine: ForwardingFixture.engine).fetch(request) { outcome in
        result.withLockedValue { $0 = outcome }
        done.signal()
    }
    done.wait()
    return result.withLockedValue { $0 } ?? .failure(ProxyError(.upstreamUnreachable, "no result"))
}

/// The proxy's own requests (token endpoints later) through the same engine.
struct UpstreamFetcherTests {
    @Test func aPostIsSentWithItsBodyAndTheAnswerIsBuffered() throws {
        let upstream = try FakeUpstream()
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let body = Array("grant_type=client_credentials&scope=a+b".utf8)
        let response = try fetch(
            .init(
                method: "POST",
                url: "http://127.0.0.1:\(upstream.port)/token",
                headers: headers,
                body: body,
                allowPlainHTTP: true
            )
        ).get()
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "echo\n")
        let seen = try #require(upstream.requests.last)
        #expect(seen.method == "POST")
        #expect(seen.bodyLength == body.count)
        #expect(seen.headers.values("Content-Length") == [String(body.count)])
        #expect(seen.headers.first("Content-Type") == "application/x-www-form-urlencoded")
    }

    @Test func aLargeAnswerIsRefused() throws {
        let upstream = try FakeUpstream()
        let result = fetch(
            .init(
                method: "GET",
                url: "http://127.0.0.1:\(upstream.port)/download/300000",
                allowPlainHTTP: true,
                maximumBodyBytes: 100_000
            )
        )
        guard case .failure(let error) = result else {
            Issue.record("a body over the limit was accepted")
            return
        }
        #expect(error.message.contains("larger than"))
    }

    @Test func plainHTTPIsRefusedUnlessAllowed() throws {
        let upstream = try FakeUpstream()
        let result = fetch(.init(method: "GET", url: "http://127.0.0.1:\(upstream.port)/x"))
        guard case .failure(let error) = result else {
            Issue.record("an http URL was fetched without being allowed")
            return
        }
        #expect(error.code == .upstreamUnreachable)
        #expect(upstream.requests.isEmpty)
    }

    @Test func errorStatusesAreAnswersNotFailures() throws {
        let upstream = try FakeUpstream()
        let response = try fetch(
            .init(method: "GET", url: "http://127.0.0.1:\(upstream.port)/status/503", allowPlainHTTP: true)
        ).get()
        #expect(response.status == 503)
    }

    @Test func silenceIsATimeout() throws {
        let upstream = try FakeUpstream()
        let result = fetch(
            .init(method: "GET", url: "http://127.0.0.1:\(upstream.port)/silent", allowPlainHTTP: true, timeout: 0.5)
        )
        guard case .failure(let error) = result else {
            Issue.record("a silent endpoint answered")
            return
        }
        #expect(error.code == .upstreamTimeout)
    }
}
