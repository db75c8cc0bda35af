/// What a login makes of one request to its loopback callback listener (the judgement of
/// ``AuthorizationCallbackStateMachine`` and ``OAuth1CallbackStateMachine``).
enum CallbackDecision: Sendable, Equatable {
    /// This login's callback: exchange the value (an authorization code, an OAuth 1
    /// verifier), then answer the browser with the outcome.
    case exchange(String)
    /// The login failed: answer with this reason and stop waiting.
    case fail(String)
    /// Not this login's callback: answer with status and reason, keep waiting.
    case refuse(status: Int, reason: String)
}
