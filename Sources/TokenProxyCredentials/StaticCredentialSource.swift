import TokenProxyConfiguration
import TokenProxySupport

/// The `static` grant: a fixed token from a secret. A `{"file": …}` secret is re-read when
/// the file changes, so a rotated key is picked up without a restart.
final class StaticCredentialSource: CredentialSource {
    private let name: String
    private let secret: Secret
    /// The answer for a secret that cannot change while the process runs (a literal or an
    /// environment variable), worked out once instead of on every request; `nil` for a file.
    private let fixed: Result<AccessToken, ProxyError>?
    /// The token of a ``fixed`` answer that is one, kept apart so that a request takes it
    /// without copying the whole answer first.
    private let fixedToken: AccessToken?

    /// Creates the source for provider `name`.
    init(name: String, secret: Secret) {
        self.name = name
        self.secret = secret
        if case .file = secret {
            self.fixed = nil
        } else {
            self.fixed = Self.answer(secret, provider: name)
        }
        if case .success(let token)? = self.fixed {
            self.fixedToken = token
        } else {
            self.fixedToken = nil
        }
    }

    /// A fixed token cannot be renewed: a 401 goes to the client.
    var canRenew: Bool { false }

    /// The secret's current value, when it is a usable token (``TokenSyntax``): a file
    /// rewritten with a bad value fails each request until it is fixed.
    func token(completion: @escaping @Sendable (Result<AccessToken, ProxyError>) -> Void) {
        completion(self.fixed ?? Self.answer(self.secret, provider: self.name))
    }

    func tokenAtHand() -> AccessToken? {
        self.fixedToken
    }

    private static func answer(_ secret: Secret, provider: String) -> Result<AccessToken, ProxyError> {
        do {
            let value = try secret.resolve()
            if let problem = TokenSyntax.problem(value) {
                return .failure(ProxyError(.tokenUnavailable, "static token: \(problem)", provider: provider))
            }
            return .success(AccessToken(value: value))
        } catch {
            return .failure(
                ProxyError(.tokenUnavailable, error.problems.map(\.message).joined(separator: "; "), provider: provider)
            )
        }
    }
}
