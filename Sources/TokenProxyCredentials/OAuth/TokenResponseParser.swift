import Foundation
import TokenProxySupport

/// Checks a token endpoint answer as `docs/reference/security.md` says: an HTML page, truncated
/// JSON, a missing `access_token`, a token a header cannot carry (``TokenSyntax``), an unknown
/// `token_type` or an absurd `expires_in` is a failure, so nothing wrong is ever cached or
/// persisted.
enum TokenResponseParser {
    /// The longest lifetime believed (``BoundedSeconds/maximumLifetime``, ten years). Longer is
    /// a server bug, not a real token.
    static let maximumExpiresIn: Double = BoundedSeconds.maximumLifetime

    /// The token in a token endpoint answer of HTTP `status` with `body`, or why there is none.
    /// A `contentType` of `application/x-www-form-urlencoded` is read as a form (as GitHub
    /// answers without `Accept: application/json`, and OAuth 1 providers do); any other, or
    /// none, as JSON. Both go through the same checks.
    /// A `DPoP` `token_type` (RFC 9449 §5) is accepted only when `acceptsDPoP`: the request
    /// carried a proof.
    static func parse(status: Int, body: [UInt8], contentType: String? = nil, acceptsDPoP: Bool = false) -> Result<
        TokenResponse, TokenEndpointError
    > {
        let object: [String: Any]
        if Self.isForm(contentType) {
            switch Self.formObject(body, status: status) {
            case .success(let fields): object = fields
            case .failure(let error): return .failure(error)
            }
        } else {
            guard let json = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
                let problem = body.isEmpty ? "empty answer" : "answer is not a JSON object"
                return .failure(TokenEndpointError(problem: problem, status: status))
            }
            object = json
        }
        guard (200..<300).contains(status) else {
            return .failure(
                TokenEndpointError(
                    error: object["error"] as? String ?? "server_error",
                    description: object["error_description"] as? String,
                    status: status
                )
            )
        }
        if let error = object["error"] as? String {
            return .failure(
                TokenEndpointError(error: error, description: object["error_description"] as? String, status: status)
            )
        }
        guard let token = object["access_token"] as? String, !token.isEmpty else {
            return .failure(TokenEndpointError(problem: "no access_token", status: status))
        }
        if let problem = TokenSyntax.problem(token) {
            return .failure(TokenEndpointError(problem: "access_token refused: \(problem)", status: status))
        }
        if let refresh = object["refresh_token"], !(refresh is NSNull) {
            guard let refresh = refresh as? String, TokenSyntax.problem(refresh) == nil else {
                return .failure(TokenEndpointError(problem: "refresh_token is not a usable token", status: status))
            }
        }
        if let type = object["token_type"] {
            // RFC 6750 bearer tokens; "N_A" is what RFC 8693 exchanges may answer; "DPoP" a
            // token bound to the proof's key (RFC 9449 §5).
            guard let type = type as? String,
                ["bearer", "n_a"].contains(type.lowercased()) || (acceptsDPoP && type.lowercased() == "dpop")
            else {
                return .failure(TokenEndpointError(problem: "unsupported token_type", status: status))
            }
        }
        var expiresIn: Double?
        // `expires` is what some older servers send (Facebook's Graph API before v2.3); it is
        // read only when `expires_in` is absent.
        let lifetime = object["expires_in"] ?? object["expires"]
        if let value = lifetime, !(value is NSNull) {
            // RFC 6749 §5.1: a positive number of seconds; strings are read too (some servers
            // quote it). NaN, infinities, zero, negatives and more than ten years fail.
            guard let number = BoundedSeconds.number(value), number > 0, number <= Self.maximumExpiresIn else {
                return .failure(TokenEndpointError(problem: "expires_in is not a sensible lifetime", status: status))
            }
            expiresIn = number
        }
        return .success(
            TokenResponse(
                accessToken: token,
                expiresIn: expiresIn,
                refreshToken: object["refresh_token"] as? String,
                scope: object["scope"] as? String,
                tokenType: object["token_type"] as? String
            )
        )
    }

    /// Whether `contentType`'s media type is `application/x-www-form-urlencoded`
    /// (case-insensitive, parameters such as `charset` ignored).
    static func isForm(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let media = contentType.split(separator: ";", maxSplits: 1).first ?? ""
        return media.trimmingCharacters(in: .whitespaces).lowercased() == "application/x-www-form-urlencoded"
    }

    /// A form answer as the fields a JSON answer would have, every value a string; a name
    /// given twice, an empty answer, one that is not UTF-8 or one with a broken percent
    /// escape (``FormEncoding/decode(_:)``) is refused.
    static func formObject(_ body: [UInt8], status: Int) -> Result<[String: Any], TokenEndpointError> {
        guard !body.isEmpty else { return .failure(TokenEndpointError(problem: "empty answer", status: status)) }
        guard let text = String(validating: body, as: UTF8.self) else {
            return .failure(TokenEndpointError(problem: "form answer is not UTF-8", status: status))
        }
        guard let pairs = FormEncoding.decode(text) else {
            return .failure(TokenEndpointError(problem: "form answer is malformed", status: status))
        }
        var fields: [String: Any] = [:]
        for (name, value) in pairs {
            guard fields.updateValue(value, forKey: name) == nil else {
                return .failure(TokenEndpointError(problem: "form answer repeats a parameter", status: status))
            }
        }
        return .success(fields)
    }
}
