import Foundation

/// Why a token endpoint answer was not a usable token.
struct TokenEndpointError: Error, Sendable, Equatable {
    /// The OAuth `error` code, when the endpoint sent one (`invalid_client`, …).
    var error: String?
    /// The `error_description`, when sent.
    var description: String?
    /// Our own explanation when the answer was malformed (HTML, truncated JSON, …).
    var problem: String?
    /// The HTTP status of the answer: a caller that must tell a refusal of the grant from
    /// one of the request reads it here (a 400 whose body says nothing is still a 400).
    var status: Int

    /// Errors a retry cannot fix: the request or the grant itself is wrong, or a success
    /// answer was unusable (asking again gets the same page). Only what may pass is retried
    /// (``isTransientStatus(_:)``); any other 4xx is a refusal whatever its body says, empty,
    /// an HTML page or JSON without `error` (RFC 9110 §15.5, RFC 6749 §5.2), and so is an
    /// answer the endpoint should not give at all (a redirect). The OAuth codes that name a
    /// wrong grant or client are permanent even on a status that would be retried.
    var isPermanent: Bool {
        if (200..<300).contains(self.status) {
            return true
        }
        switch self.error {
        case "invalid_grant", "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope",
            "invalid_request", "access_denied":
            return true
        default:
            return !Self.isTransientStatus(self.status)
        }
    }

    /// Whether an answer of HTTP `status` may be different when asked again: a server error
    /// (5xx, RFC 9110 §15.6), 408 Request Timeout (§15.5.9) or 429 Too Many Requests
    /// (RFC 6585 §4). Connection failures and timeouts never reach a status, and are retried.
    static func isTransientStatus(_ status: Int) -> Bool {
        status >= 500 || status == 408 || status == 429
    }

    /// A message for the client's 502 body and the logs: the OAuth fields, never a token.
    var message: String {
        var parts: [String] = []
        if let error = self.error { parts.append(error) }
        if let description = self.description { parts.append(description) }
        if let problem = self.problem { parts.append(problem) }
        let status = "(HTTP \(self.status))"
        return "token endpoint: " + (parts.isEmpty ? status : parts.joined(separator: ": ") + " " + status)
    }
}
