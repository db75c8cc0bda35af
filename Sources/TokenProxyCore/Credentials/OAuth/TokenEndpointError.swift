import Foundation

/// Why a token endpoint answer was not a usable token.
struct TokenEndpointError: Error, Sendable, Equatable {
    /// The OAuth `error` code, when the endpoint sent one (`invalid_client`, …).
    var error: String?
    /// The `error_description`, when sent.
    var description: String?
    /// Our own explanation when the answer was malformed (HTML, truncated JSON, …).
    var problem: String?
    /// The HTTP status.
    var status: Int

    /// Errors a retry cannot fix (RFC 6749 §5.2): the request or the grant itself is wrong,
    /// or a success answer was unusable (asking again gets the same page).
    var isPermanent: Bool {
        if (200..<300).contains(self.status) {
            return true
        }
        switch self.error {
        case "invalid_grant", "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope",
            "invalid_request", "access_denied":
            return true
        default:
            return self.status != 429 && self.status < 500 && self.error != nil
        }
    }

    /// A message for the client's 502 body and the logs: the OAuth fields, never a token.
    var message: String {
        var parts: [String] = []
        if let error = self.error { parts.append(error) }
        if let description = self.description { parts.append(description) }
        if let problem = self.problem { parts.append(problem) }
        parts.append("(HTTP \(self.status))")
        return "token endpoint: " + parts.joined(separator: ": ")
    }
}
