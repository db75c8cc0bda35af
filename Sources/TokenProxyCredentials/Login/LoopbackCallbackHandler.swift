import Foundation
import TokenProxyHTTP
import TokenProxyServer
import TokenProxySupport

/// The loopback redirect listener of an authorization code login (RFC 8252 §7.3): hands
/// each request's path and query to the login, which answers with a page.
///
/// Pages are plain HTML with `Referrer-Policy: no-referrer` (the callback URL carries the
/// code), no caching, and a Content-Security-Policy that allows nothing to load.
final class LoopbackCallbackHandler: HTTPExchangeHandler {
    /// Receives a request; calls the responder once with the status and the page's message.
    typealias Receiver =
        @Sendable (
            _ path: String,
            _ parameters: [(String, String)],
            _ respond: @escaping @Sendable (_ status: Int, _ title: String, _ message: String) -> Void
        ) -> Void

    private let receive: Receiver

    init(receive: @escaping Receiver) {
        self.receive = receive
    }

    func handle(_ exchange: HTTPExchange) {
        let bound = QueueBound(exchange, context: exchange.context)
        guard exchange.head.method == "GET" else {
            exchange.respond(Self.page(405, "Not allowed", "Only the browser's redirect is expected here."))
            return
        }
        // A pair that cannot be decoded could hide a second `state` or `oauth_token`.
        guard let parameters = exchange.head.query.map({ FormEncoding.decode($0) }) ?? [] else {
            exchange.respond(Self.page(400, "Not this login", "The query is malformed; nothing was done."))
            return
        }
        self.receive(exchange.head.path, parameters) { status, title, message in
            bound.execute { $0.respond(Self.page(status, title, message)) }
        }
    }

    /// A complete page saying plainly what happened.
    static func page(_ status: Int, _ title: String, _ message: String) -> HTTPResponse {
        let html = """
            <!doctype html>
            <html><head><meta charset="utf-8"><title>tokenproxy: \(Self.escape(title))</title></head>
            <body style="font-family: sans-serif; max-width: 40em; margin: 4em auto">
            <h1>\(Self.escape(title))</h1>
            <p>\(Self.escape(message))</p>
            </body></html>

            """
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Content-Security-Policy", value: "default-src 'none'; style-src 'unsafe-inline'")
        return HTTPResponse(status: status, headers: headers, body: Array(html.utf8), closeConnection: true)
    }

    private static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
