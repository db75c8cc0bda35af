import Foundation
import Testing

@testable import TokenProxyApp

struct DemoTests {
    @Test func theDemoServesThroughTheProxyAndTheUpstreamRefusesWithoutAToken() throws {
        let demo = try DemoEnvironment.start(listen: .inet(host: "127.0.0.1", port: 0), logger: TestLogging.logger)
        defer { demo.stop {} }
        guard case .inet(_, let port) = demo.proxyAddress else {
            Issue.record("no proxy port")
            return
        }
        #expect(demo.instructions.contains("/demo/hello"))

        let direct = try TestClient(port: demo.upstreamPort)
        try direct.send("GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try direct.readResponse().status == 401)

        let client = try TestClient(port: port)
        for _ in 0..<3 {
            try client.send("GET /demo/hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.bodyText.contains("hello from the demo upstream"))
        }
        try client.send("POST /demo/items HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nx=1")
        #expect(try client.readResponse().status == 200)
        #expect(demo.authorization.tokensIssued == 1)
    }

    @Test func theDemoAuthorizationServerRefusesAWrongSecret() throws {
        let authorization = DemoAuthorizationServer()
        let server = try TestHTTPServer(handler: authorization)
        let client = try TestClient(port: server.port)
        let basic = Data("demo-client:wrong".utf8).base64EncodedString()
        let body = "grant_type=client_credentials"
        try client.send(
            "POST /token HTTP/1.1\r\nHost: a\r\nAuthorization: Basic \(basic)\r\nContent-Length: \(body.count)\r\n\r\n\(body)"
        )
        let response = try client.readResponse()
        #expect(response.status == 401)
        #expect(response.bodyText.contains("invalid_client"))
        #expect(authorization.tokensIssued == 0)
    }
}
