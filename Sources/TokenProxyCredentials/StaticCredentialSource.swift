import TokenProxyConfiguration
import TokenProxySupport

/// The `static` grant: a fixed token from a secret. A `{"file": …}` secret is re-read when
/// the file changes, so a rotated key is picked up without a restart.
struct StaticCredentialSource: CredentialSource {
    private let name: String
    private let secret: Secret

    /// Creates the source for provider `name`.
    init(name: String, secret: Secret) {
        self.name = name
        self.secret = secret
    }

    /// A fixed token cannot be renewed: a 401 goes to the client.
    var canRenew: Bool { false }

    /// The secret's current value, when it is a usable token (``TokenSyntax``): a file
    /// rewritten with a bad value fails each request until it is fixed.
    func token(completion: @escaping @Sendable (Result<AccessToken, ProxyError>) -> Void) {
        do {
            let value = try self.secret.resolve()
            if let problem = TokenSyntax.problem(value) {
                completion(.failure(ProxyError(.tokenUnavailable, "static token: \(problem)", provider: self.name)))
                return
            }
            completion(.success(AccessToken(value: value)))
        } catch {
            completion(
                .failure(
                    ProxyError(
                        .tokenUnavailable,
                        error.problems.map(\.message).joined(separator: "; "),
                        provider: self.name
                    )
                )
            )
        }
    }
}
