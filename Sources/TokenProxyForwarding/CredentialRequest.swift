import Logging
import TokenProxyCredentials
import TokenProxyHTTP
import TokenProxySupport

/// The credential one attempt of a request (forwarded, or a tunnel's handshake) is sent
/// with, made from the token its provider gave: the token formatted, or for a provider that
/// signs each request, its signature over the method, the URL and a form body. A failure
/// (no token, or no signature) is logged here, once for both kinds of request.
struct CredentialRequest {
    /// A token, the header made from it, and whether it was fetched while the request
    /// waited (the access line's `token_refreshed`).
    struct Credential {
        let token: AccessToken
        let header: CredentialHeader
        let fetchedForRequest: Bool
    }

    let entry: CredentialRegistry.Entry
    let method: String
    let url: String
    /// A form body the signature covers (RFC 5849 §3.4.1.3.1).
    let formBody: [UInt8]?
    let route: String
    /// When the request arrived: a token obtained since was fetched for it.
    let requestStart: MonotonicTime
    let logger: Logger

    /// The credential made from `result`, or the error the client is answered with.
    func credential(from result: Result<AccessToken, ProxyError>) -> Result<Credential, ProxyError> {
        // Switched over rather than mapped: each closure of `flatMap` and `map` copied the
        // token and the result once more, on every request.
        switch result {
        case .success(let token):
            switch self.header(for: token) {
            case .success(let header):
                return .success(
                    Credential(
                        token: token,
                        header: header,
                        fetchedForRequest: token.wasObtained(since: self.requestStart)
                    )
                )
            case .failure(let error):
                return .failure(self.logged(error))
            }
        case .failure(let error):
            return .failure(self.logged(error))
        }
    }

    /// The credential of a token formatted into its header, for a provider that neither
    /// signs requests nor binds its tokens to a DPoP key: it needs nothing of the request.
    /// Nil for any other case, and for a failure, which ``credential(from:)`` makes and logs.
    static func formatted(
        _ result: Result<AccessToken, ProxyError>,
        entry: CredentialRegistry.Entry,
        requestStart: MonotonicTime
    ) -> Credential? {
        guard case .success(let token) = result, entry.requestAuthorizer == nil, token.binding == nil,
            case .success(let header) = entry.header(for: token)
        else { return nil }
        return Credential(token: token, header: header, fetchedForRequest: token.wasObtained(since: requestStart))
    }

    /// `error` for this request's route, logged.
    private func logged(_ error: ProxyError) -> ProxyError {
        var error = error
        error.route = self.route
        self.logger.warning(
            "no credential",
            metadata: [
                "provider": "\(self.entry.configuration.name)", "error": "\(error.code)", "reason": "\(error.message)",
            ]
        )
        return error
    }

    private func header(for token: AccessToken) -> Result<CredentialHeader, ProxyError> {
        if let authorizer = self.entry.requestAuthorizer {
            return authorizer.authorization(method: self.method, url: self.url, formBody: self.formBody)
        }
        if let binding = token.binding {
            // RFC 9449 §7.1: the DPoP scheme, and a proof of this request bound to the token.
            guard !token.value.isEmpty, HTTPGrammar.isValidFieldValue(token.value.utf8) else {
                return .failure(
                    ProxyError(
                        .tokenUnavailable,
                        "the provider produced an empty token or one with control characters",
                        provider: self.entry.configuration.name
                    )
                )
            }
            switch binding.proof(method: self.method, url: self.url, accessToken: token.value) {
            case .success(let proof):
                return .success(CredentialHeader(name: "Authorization", value: "DPoP " + token.value, proof: proof))
            case .failure(let failure):
                return .failure(
                    ProxyError(.tokenUnavailable, failure.description, provider: self.entry.configuration.name)
                )
            }
        }
        return self.entry.header(for: token)
    }
}
