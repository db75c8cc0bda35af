import TokenProxySupport

/// Judges the requests that reach the loopback redirect during an authorization code login
/// (RFC 6749 §4.1.2), as a pure state machine: only a callback carrying this login's
/// `state` leads to a code exchange, and only once.
///
/// A request with a wrong or missing `state` is refused and the login keeps waiting: it
/// may be a forged request from another page, and must not end the user's real login. A
/// callback with the right `state` ends the login either way: with a code to exchange, or
/// with the error the authorization server or the `iss` check (RFC 9207) gave.
struct AuthorizationCallbackStateMachine {
    /// What to do with a request.
    typealias Action = CallbackDecision

    private enum State {
        case waiting
        case finished
    }

    private var state = State.waiting
    private let expectedState: String
    private let issuer: String?
    private let issuerRequired: Bool

    /// A login that sent `state`; `issuer` is the authorization server's issuer when known,
    /// `issuerRequired` when its metadata says it always sends `iss` (RFC 9207 §3).
    init(state: String, issuer: String?, issuerRequired: Bool) {
        self.expectedState = state
        self.issuer = issuer
        self.issuerRequired = issuerRequired
    }

    /// A request for `path` with the decoded query `parameters`.
    mutating func request(path: String, parameters: [(String, String)]) -> Action {
        guard path == "/callback" else {
            return .refuse(status: 404, reason: "This address only receives the login callback.")
        }
        func value(_ name: String) -> String? {
            FormEncoding.single(name, in: parameters)
        }
        guard let state = value("state"), ConstantTime.equals(state, self.expectedState) else {
            return .refuse(status: 400, reason: "The state parameter does not match this login; nothing was done.")
        }
        guard case .waiting = self.state else {
            return .refuse(status: 400, reason: "This login already received its callback; nothing more was done.")
        }
        self.state = .finished
        // RFC 9207 §2.4: a response from another issuer is a mix-up attack.
        if let iss = value("iss") {
            if let issuer = self.issuer, Self.normalizedIssuer(iss) != Self.normalizedIssuer(issuer) {
                return .fail("the authorization response came from issuer \(iss), not \(issuer)")
            }
        } else if self.issuerRequired {
            return .fail("the authorization response carries no iss parameter, which this issuer always sends")
        }
        if let error = value("error") {
            let description = value("error_description").map { ": \($0)" } ?? ""
            return .fail("the authorization server answered \(error)\(description)")
        }
        guard let code = value("code"), !code.isEmpty else {
            return .fail("the callback carries no code")
        }
        return .exchange(code)
    }

    private static func normalizedIssuer(_ issuer: String) -> String {
        var issuer = issuer
        while issuer.hasSuffix("/") { issuer.removeLast() }
        return issuer
    }
}
