import Foundation
import Logging
import Testing

/// A proxy whose route uses a `client_credentials` provider at a fake authorization server.
/// `@unchecked Sendable`: its members are set once; each request uses a client of its own.
final class OAuthFixture: @unchecked Sendable {
    let auth: FakeAuthorizationServer
    let forwarding: ForwardingFixture

    init(
        extra: String = "",
        route: String = "",
        logger: Logger = TestLogging.logger,
        prepare: (FakeAuthorizationServer) -> Void = { _ in }
    ) throws {
        let auth = try FakeAuthorizationServer()
        prepare(auth)
        self.auth = auth
        setenv("TOKENPROXY_TEST_CC_SECRET", "s3cr3t:&+", 1)
        self.forwarding = try ForwardingFixture(
            provider: """
                {"grant": "client_credentials", "token_url": "\(auth.tokenURL)", "allow_insecure_endpoints": true,
                 "client_id": "proxy client", "client_secret": {"env": "TOKENPROXY_TEST_CC_SECRET"},
                 "scopes": ["read", "write"], "audience": "https://api.example"\(extra)}
                """,
            route: route,
            logger: logger
        )
    }

    func get(_ path: String = "/api/echo") throws -> TestClient.Response {
        let client = try self.forwarding.client()
        try client.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try client.readResponse()
    }

    func post(_ path: String, body: [UInt8]) throws -> TestClient.Response {
        let client = try self.forwarding.client()
        try client.send("POST \(path) HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.count)\r\n\r\n")
        try client.send(body)
        return try client.readResponse()
    }
}
