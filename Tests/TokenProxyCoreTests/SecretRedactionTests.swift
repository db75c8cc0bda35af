import Crypto
import Foundation
import Logging
import Synchronization
import Testing

struct SecretRedactionTests {
    @Test func tokensNeverReachTheLogs() throws {
        let logs = CapturedLogs()
        let scripts = try ScriptDirectory()
        let failing = try scripts.script("fail", "echo 'cannot mint token' >&2\nexit 1")
        let fixture = try ForwardingFixture(
            provider: #"{"grant": "static", "token": "injected-secret-4711"}"#,
            logger: logs.logger()
        )
        let client = try fixture.client()
        let requests = [
            "GET /api/echo?api_key=query-secret-99 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer client-secret-1\r\n\r\n",
            "GET /dead/x HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer client-secret-1\r\n\r\n",
            "GET /api/status/401 HTTP/1.1\r\nHost: localhost\r\nCookie: session=cookie-secret-7\r\n\r\n",
        ]
        for request in requests {
            try client.send(request)
            _ = try client.readResponse()
        }
        // A provider whose command fails logs why, without any token.
        let commandFixture = try ForwardingFixture(
            provider: #"{"grant": "command", "command": ["\#(failing)"]}"#,
            logger: logs.logger()
        )
        let second = try commandFixture.client()
        try second.send("GET /api/echo HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer client-secret-1\r\n\r\n")
        #expect(try second.readResponse().status == 502)
        #expect(eventually { logs.text.contains("cannot mint token") })
        let text = logs.text
        #expect(text.contains("status=200"))
        for secret in ["injected-secret-4711", "client-secret-1", "query-secret-99", "cookie-secret-7"] {
            #expect(!text.contains(secret), "\(secret) reached the logs")
        }
    }
}
