import Foundation
import Testing

@testable import TokenProxyForwarding

/// TLS to a real nginx: verification against a CA file, hostname checks, mutual TLS, HTTP/2.
/// Serialized: one nginx for the suite's tests, started per test to keep them independent.
@Suite(.serialized)
struct TLSUpstreamTests {
    private func proxy(_ nginx: NginxFixture, routes: String) throws -> TestProxy {
        let json = """
            {"providers": {"svc": {"grant": "static", "token": "tls-token-9"}}, "routes": [\(routes)]}
            """
        return try TestProxy.forwarding(json)
    }

    /// One route at `prefix` to nginx's `port` with the test's static provider, verified
    /// against `caFile` (the system store without one).
    private func route(_ prefix: String, port: UInt16, caFile: String?) -> String {
        let ca = caFile.map { #", "ca_file": "\#($0)""# } ?? ""
        return #"{"path_prefix": "\#(prefix)", "upstream": "https://127.0.0.1:\#(port)", "provider": "svc"\#(ca)}"#
    }

    @Test func verifiedTLSCarriesTheCredentialOverHTTP2() throws {
        let nginx = try NginxFixture()
        let proxy = try self.proxy(
            nginx,
            routes: self.route("/tls", port: nginx.tlsPort, caFile: nginx.caFile)
        )
        let client = try proxy.client()
        try client.send("GET /tls/hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.bodyText == "tls ok\n")
        #expect(response.header("X-Seen-Authorization") == "Bearer tls-token-9")
        #expect(response.header("X-Seen-Protocol") == "HTTP/2.0")
    }

    @Test func theWrongCAIs502() throws {
        let nginx = try NginxFixture()
        let proxy = try self.proxy(
            nginx,
            routes: self.route("/tls", port: nginx.tlsPort, caFile: nginx.otherCAFile)
        )
        let client = try proxy.client()
        try client.send("GET /tls/hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 502)
        #expect(response.header("X-Tokenproxy-Error") == "upstream_unreachable")
    }

    @Test func theSystemStoreDoesNotTrustATestCA() throws {
        let nginx = try NginxFixture()
        let proxy = try self.proxy(
            nginx,
            routes: self.route("/tls", port: nginx.tlsPort, caFile: nil)
        )
        let client = try proxy.client()
        try client.send("GET /tls/hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 502)
    }

    @Test func aHostnameMismatchIs502() throws {
        let nginx = try NginxFixture()
        let proxy = try self.proxy(
            nginx,
            routes: self.route("/tls", port: nginx.wrongNamePort, caFile: nginx.caFile)
        )
        let client = try proxy.client()
        try client.send("GET /tls/hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 502)
        #expect(response.bodyText.contains("upstream_unreachable"))
    }

    @Test func mutualTLSWhenRequiredAndGiven() throws {
        let nginx = try NginxFixture()
        let proxy = try self.proxy(
            nginx,
            routes: """
                {"path_prefix": "/mtls", "upstream": "https://127.0.0.1:\(nginx.mutualTLSPort)", "provider": "svc",
                 "ca_file": "\(nginx.caFile)", "client_cert": "\(nginx.clientCertificate)", "client_key": {"file": "\(nginx.clientKey)"}},
                {"path_prefix": "/nocert", "upstream": "https://127.0.0.1:\(nginx.mutualTLSPort)", "provider": "svc",
                 "ca_file": "\(nginx.caFile)"}
                """
        )
        let client = try proxy.client()
        try client.send("GET /mtls/x HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let given = try client.readResponse()
        #expect(given.status == 200)
        #expect(given.bodyText.contains("mtls ok"))
        #expect(given.bodyText.contains("tokenproxy-client"))
        try client.send("GET /nocert/x HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let refused = try client.readResponse()
        // nginx answers a missing client certificate itself with 400; that answer is relayed.
        #expect(refused.status == 400)
        #expect(refused.header("X-Tokenproxy-Error") == nil)
    }

    @Test func aRequestHeadLargerThanTheUploadBufferGoesOutWhole() throws {
        // Over TLS with HTTP/1.1, libcurl sends the request head through its upload buffer,
        // which is 16 KiB for requests without a body: a 21 KB head takes more than one piece.
        let nginx = try NginxFixture()
        let proxy = try self.proxy(
            nginx,
            routes: self.route("/h1", port: nginx.http1Port, caFile: nginx.caFile)
        )
        let pads = ["a", "b", "c"].map { String(repeating: $0, count: 7000) }
        let client = try proxy.client()
        try client.send(
            "GET /h1/pad HTTP/1.1\r\nHost: localhost\r\n"
                + pads.enumerated().map { "X-Pad-\($0.offset + 1): \($0.element)\r\n" }.joined() + "\r\n"
        )
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.header("X-Seen-Protocol") == "HTTP/1.1")
        #expect(response.bodyText == pads.joined())
    }
}
