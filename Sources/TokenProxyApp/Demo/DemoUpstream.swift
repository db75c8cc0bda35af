import Foundation
import TokenProxyServer

/// The `tokenproxy demo` upstream: an API that answers only requests bearing a token the demo
/// authorization server issued, and 401 otherwise.
struct DemoUpstream: HTTPExchangeHandler {
    private let authorization: DemoAuthorizationServer

    /// Creates the upstream trusting `authorization`'s tokens.
    init(authorization: DemoAuthorizationServer) {
        self.authorization = authorization
    }

    /// Answers any path.
    func handle(_ exchange: HTTPExchange) {
        exchange.readBody { event in
            guard case .end = event else { return }
            let header = exchange.head.headers.first("Authorization") ?? ""
            guard header.hasPrefix("Bearer "), self.authorization.isValid(String(header.dropFirst(7))) else {
                var response = DemoAuthorizationServer.json(
                    401,
                    ["error": "invalid_token", "message": "this API needs a token from the demo authorization server"]
                )
                response.head.headers.add(name: "WWW-Authenticate", value: #"Bearer error="invalid_token""#)
                exchange.respond(response)
                return
            }
            exchange.respond(
                DemoAuthorizationServer.json(
                    200,
                    [
                        "message": "hello from the demo upstream",
                        "method": exchange.head.method,
                        "path": exchange.head.path,
                        "tokens_issued_so_far": self.authorization.tokensIssued,
                    ]
                )
            )
        }
    }
}
