import Foundation
import Synchronization
import TokenProxyHTTP
import TokenProxyServer
import TokenProxySupport

/// The `tokenproxy demo` authorization server: a client-credentials token endpoint on
/// loopback that issues short-lived random tokens, and can say whether a token is valid.
/// For the demo only; it is not an OAuth server to deploy.
package final class DemoAuthorizationServer: HTTPExchangeHandler, Sendable {
    /// The demo client's id.
    let clientID = "demo-client"
    /// The demo client's secret, random per run.
    let clientSecret: String
    /// Seconds each token lives.
    let lifetime: Int
    private let issued = Mutex<[String: ContinuousClock.Instant]>([:])
    private let count = Mutex(0)

    /// Creates the server with a fresh random secret.
    init(lifetime: Int = 30) {
        self.clientSecret = SecureRandom.hex(16)
        self.lifetime = lifetime
    }

    /// How many tokens were issued so far.
    var tokensIssued: Int { self.count.withLockedValue { $0 } }

    /// Whether `token` was issued here and has not expired.
    func isValid(_ token: String) -> Bool {
        self.issued.withLockedValue { issued in
            guard let expiry = issued[token] else { return false }
            return ContinuousClock.now < expiry
        }
    }

    /// Answers `POST /token`.
    package func handle(_ exchange: HTTPExchange) {
        var body: [UInt8] = []
        exchange.readBody { [self] event in
            switch event {
            case .bytes(let bytes):
                if body.count < 65536 { body += bytes }
            case .end:
                exchange.respond(self.answer(exchange.head, form: String(decoding: body, as: UTF8.self)))
            }
        }
    }

    private func answer(_ head: HTTPRequestHead, form: String) -> HTTPResponse {
        guard head.method == "POST", head.path == "/token" else {
            return Self.json(404, ["error": "invalid_request", "error_description": "POST /token"])
        }
        guard let fields = FormEncoding.decode(form) else {
            return Self.json(400, ["error": "invalid_request", "error_description": "malformed form"])
        }
        // RFC 6749 §3.2: a parameter given twice is refused, as a missing one is.
        guard FormEncoding.single("grant_type", in: fields) == "client_credentials" else {
            return Self.json(400, ["error": "unsupported_grant_type"])
        }
        let expected = "Basic " + Data("\(self.clientID):\(self.clientSecret)".utf8).base64EncodedString()
        guard head.headers.first("Authorization") == expected else {
            return Self.json(401, ["error": "invalid_client", "error_description": "unknown client or wrong secret"])
        }
        let token = SecureRandom.hex(24)
        self.issued.withLockedValue { issued in
            let now = ContinuousClock.now
            issued = issued.filter { $0.value > now }
            issued[token] = now + .seconds(self.lifetime)
        }
        self.count.withLockedValue { $0 += 1 }
        return Self.json(200, ["access_token": token, "token_type": "Bearer", "expires_in": self.lifetime])
    }

    static func json(_ status: Int, _ object: [String: any Sendable]) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Cache-Control", value: "no-store")
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return HTTPResponse(status: status, headers: headers, body: [UInt8](data) + [UInt8(ascii: "\n")])
    }
}
