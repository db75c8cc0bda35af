import Foundation
import TokenProxySupport

/// Renders a ``ProxyError`` as the response the proxy sends: the single place where an error
/// becomes a status line, a JSON body and the `X-Tokenproxy-Error` header
/// (`docs/contributing/architecture.md`, "Errors").
package enum ErrorResponse {
    /// The header naming the error code on every response the proxy produces itself.
    static let errorHeaderName = "X-Tokenproxy-Error"

    private struct Body: Encodable {
        var error: String
        var message: String
        var route: String?
        var provider: String?
    }

    /// The complete response for `error`.
    package static func response(for error: ProxyError) -> HTTPResponse {
        let body = Body(
            error: error.code.description,
            message: error.message,
            route: error.route,
            provider: error.provider
        )
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: errorHeaderName, value: error.code.description)
        headers.add(name: "Cache-Control", value: "no-store")
        if error.code == .methodNotAllowed {
            // RFC 9110 §15.5.6: a 405 lists the methods the target does support.
            headers.add(name: "Allow", value: "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
        }
        var response = HTTPResponse(
            status: error.code.status,
            headers: headers,
            body: JSONOutput.encode(body),
            closeConnection: error.code.closesConnection
        )
        response.error = error
        return response
    }

    /// The access-log fields of an answer to `error` (`docs/reference/log-fields.md`): `error`,
    /// its code, always; `reason`, its message, for a 502 or 504, where the code alone does not
    /// say which peer failed how. The message is the one the client's body carries, so it
    /// holds no secret; the log handler escapes its control characters.
    package static func logFields(for error: ProxyError) -> [(key: String, value: String)] {
        let status = error.code.status
        guard status == 502 || status == 504 else {
            return [(self.errorField, error.code.description)]
        }
        return [(self.errorField, error.code.description), (self.reasonField, error.message)]
    }

    /// The access-log field naming an error answer's code.
    static let errorField = "error"
    /// The access-log field holding a 502 or 504 answer's message.
    static let reasonField = "reason"
}

extension ErrorResponse {
    /// The complete wire bytes of the answer to `error` when no exchange owns the stream
    /// (a broken request, a refused connection): HTTP/1.1, `Connection: close`.
    package static func wireBytes(for error: ProxyError) -> [UInt8] {
        let response = Self.response(for: error)
        var keepAlive = false
        var encoder = ResponseEncoder()
        var bytes = encoder.encodeHead(
            response.head,
            requestVersion: .http1_1,
            requestIsHead: false,
            keepAlive: &keepAlive
        )
        encoder.encodeBody(response.body, into: &bytes)
        return bytes
    }
}
