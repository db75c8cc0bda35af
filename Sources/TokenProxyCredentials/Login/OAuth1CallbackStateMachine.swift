import TokenProxySupport

/// Judges the requests that reach the loopback callback during an `oauth1` login (RFC 5849
/// §2.2), as a pure state machine: only a callback naming this login's temporary
/// credentials (`oauth_token`) leads to the verifier's exchange, and only once.
///
/// A request naming another token, or none, is refused and the login keeps waiting: it may
/// be forged by another page and must not end the person's real login. A callback naming
/// this login's token ends it either way: with a verifier to exchange, or with the refusal
/// the provider reported (`denied=TOKEN`, `oauth_problem`).
struct OAuth1CallbackStateMachine {
    /// What to do with a request.
    typealias Action = CallbackDecision

    private var finished = false
    private let token: String

    /// A login whose temporary credentials are `token`.
    init(token: String) {
        self.token = token
    }

    /// A request for `path` with the decoded query `parameters`.
    mutating func request(path: String, parameters: [(String, String)]) -> Action {
        guard path == "/callback" else {
            return .refuse(status: 404, reason: "This address only receives the login callback.")
        }
        func value(_ name: String) -> String? {
            FormEncoding.single(name, in: parameters)
        }
        // Some providers come back with `denied=TOKEN` instead of `oauth_token` when the
        // person declines.
        let named = value("oauth_token") ?? value("denied")
        guard let named, ConstantTime.equals(named, self.token) else {
            return .refuse(status: 400, reason: "The oauth_token does not match this login; nothing was done.")
        }
        guard !self.finished else {
            return .refuse(status: 400, reason: "This login already received its callback; nothing more was done.")
        }
        self.finished = true
        if value("oauth_token") == nil {
            return .fail("the provider reports that access was denied")
        }
        if let problem = OAuth1Problem.named(inForm: parameters) {
            return .fail("the provider reports oauth_problem=\(problem)")
        }
        guard let verifier = value("oauth_verifier"), !verifier.isEmpty else {
            return .fail("the callback carries no oauth_verifier")
        }
        return .exchange(verifier)
    }
}
