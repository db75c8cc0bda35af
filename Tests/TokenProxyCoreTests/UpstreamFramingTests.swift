import Foundation
import Synchronization
import Testing

@testable import TokenProxyForwarding

/// A proxy whose only route, `/raw`, leads to a ``RawUpstream``.
final class RawUpstreamFixture {
    let upstream: RawUpstream
    let proxy: TestProxy

    /// `answers` maps the path after `/raw` (`/a`) to the upstream's bytes; any other path
    /// gets 200 with the body `second`.
    init(_ answers: [String: [UInt8]]) throws {
        self.upstream = try RawUpstream { head in
            let target = head.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            let path = String(target.dropFirst("/base".count))
            return answers[path] ?? RawUpstream.answer(["HTTP/1.1 200 OK", "Content-Length: 6"], body: "second")
        }
        let json = """
            {"providers": {},
             "routes": [{"name": "raw", "path_prefix": "/raw",
                         "upstream": "http://127.0.0.1:\(self.upstream.port)/base", "allow_insecure_upstream": true}]}
            """
        self.proxy = try TestProxy.forwarding(json)
    }

    func client() throws -> TestClient {
        try self.proxy.client()
    }
}

/// A second response hidden in a first one's body, as an attacker would place it.
let smuggledAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"

private func chunked(_ body: String) -> String {
    String(body.utf8.count, radix: 16) + "\r\n" + body + "\r\n0\r\n\r\n"
}

private let pipelined = "GET /raw/a HTTP/1.1\r\nHost: localhost\r\n\r\nGET /raw/b HTTP/1.1\r\nHost: localhost\r\n\r\n"

struct UpstreamFramingTests {
    @Test func transferEncodingWinsOverContentLength() throws {
        let fixture = try RawUpstreamFixture([
            "/a": RawUpstream.answer(
                ["HTTP/1.1 200 OK", "Content-Length: 5", "Transfer-Encoding: chunked"],
                body: chunked("hello" + smuggledAnswer)
            )
        ])
        let client = try fixture.client()
        try client.send(pipelined)
        let first = try client.readResponse()
        #expect(first.status == 200)
        #expect(first.header("Content-Length") == nil)
        #expect(first.header("Transfer-Encoding") == "chunked")
        #expect(first.bodyText == "hello" + smuggledAnswer)
        let second = try client.readResponse()
        #expect(second.bodyText == "second")
        client.shutdownWrite()
        #expect(try client.isClosedByServer())
    }

    @Test func transferEncodingWinsForAnHTTP10Client() throws {
        let fixture = try RawUpstreamFixture([
            "/a": RawUpstream.answer(
                ["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "Content-Length: 5"],
                body: chunked("hello" + smuggledAnswer)
            )
        ])
        let client = try fixture.client()
        try client.send("GET /raw/a HTTP/1.0\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.header("Content-Length") == nil)
        #expect(response.bodyText == "hello" + smuggledAnswer)
    }

    @Test func bytesPastTheContentLengthNeverReachTheClient() throws {
        let fixture = try RawUpstreamFixture([
            "/a": RawUpstream.answer(["HTTP/1.1 200 OK", "Content-Length: 5"], body: "hello" + smuggledAnswer)
        ])
        let client = try fixture.client()
        try client.send(pipelined)
        let first = try client.readResponse()
        #expect(first.bodyText == "hello")
        let second = try client.readResponse()
        #expect(second.bodyText == "second")
        client.shutdownWrite()
        #expect(try client.isClosedByServer())
    }

    @Test func aBodyShorterThanItsLengthAbortsTheClient() throws {
        let fixture = try RawUpstreamFixture([
            "/a": RawUpstream.answer(["HTTP/1.1 200 OK", "Content-Length: 10"], body: "hello")
        ])
        let client = try fixture.client()
        try client.send(pipelined)
        let head = try client.readHead()
        #expect(head.header("Content-Length") == "10")
        var received: [UInt8] = []
        let complete = try client.streamBody(of: head) { received += $0 }
        #expect(!complete)
        #expect(received == Array("hello".utf8))
        #expect(try client.isClosedByServer())
    }

    @Test(
        arguments: [
            ("HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 42", 200, "42"),
            ("GET", "HTTP/1.1 204 No Content\r\nContent-Length: 5", 204, nil),
            ("GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 7", 304, nil),
        ] as [(String, String, Int, String?)]
    )
    func answersWithoutABodyWriteNone(method: String, head: String, status: Int, length: String?) throws {
        let fixture = try RawUpstreamFixture(["/a": RawUpstream.answer([head])])
        let client = try fixture.client()
        try client.send(
            "\(method) /raw/a HTTP/1.1\r\nHost: localhost\r\n\r\nGET /raw/b HTTP/1.1\r\nHost: localhost\r\n\r\n"
        )
        let first = try client.readResponse(headRequest: method == "HEAD")
        #expect(first.status == status)
        #expect(first.header("Content-Length") == length)
        #expect(first.header("Transfer-Encoding") == nil)
        let second = try client.readResponse()
        #expect(second.status == 200)
        #expect(second.bodyText == "second")
    }

    @Test(arguments: [
        "Content-Length: 5\r\nContent-Length: 6",
        "Content-Length: 5, 6",
        "Content-Length: abc",
        "Content-Length: -5",
        "Content-Length: 99999999999999999999",
        "Transfer-Encoding: gzip",
    ])
    func unrecoverableFramingIsAnswered502(fields: String) throws {
        let fixture = try RawUpstreamFixture(["/a": RawUpstream.answer(["HTTP/1.1 200 OK", fields], body: "hello")])
        let client = try fixture.client()
        let response = try client.get("/raw/a")
        #expect(response.status == 502)
        #expect(response.bodyText.contains("upstream_unreachable"))
        #expect(!response.bodyText.contains("hello"))
    }

    @Test func identicalRepeatedLengthsAreOneLength() throws {
        let fixture = try RawUpstreamFixture([
            "/a": RawUpstream.answer(["HTTP/1.1 200 OK", "Content-Length: 5", "Content-Length: 5, 5"], body: "hello")
        ])
        let response = try fixture.client().get("/raw/a")
        #expect(response.status == 200)
        #expect(response.header("Content-Length") == "5")
        #expect(response.bodyText == "hello")
    }
}
