import Foundation
import TokenProxyHTTP
import TokenProxySupport
import TokenProxyUpstream

extension OAuth1Login {
    /// Largest answer accepted from the provider's token endpoints.
    private static let maximumAnswerBytes = 64 << 10
    /// Longest token or secret accepted from the provider.
    private static let maximumCredentialLength = 4096

    /// A signed, empty POST to one of the provider's token endpoints; the form-encoded
    /// answer's pairs, or why there are none (the provider's `oauth_problem` included).
    /// Messages name the endpoint by its configuration key, never by its URL, whose query
    /// may hold a secret.
    /// The request's whole life is `limits.token_request_seconds` or what is left of the
    /// login's `deadline`, whichever is shorter.
    func signedPost(
        url: String,
        token: Temporary?,
        extra: [OAuth1Signer.Parameter],
        what: String,
        endpoint: String,
        deadline: LoginDeadline
    ) -> Result<[(String, String)], LoginError> {
        let credentials: OAuth1Signer.Credentials
        switch OAuth1Signer.Credentials.consumer(of: self.provider) {
        case .failure(let error): return .failure(LoginError(.exchangeFailed, error.message))
        case .success(var consumer):
            consumer.token = token?.token
            consumer.tokenSecret = token?.secret
            credentials = consumer
        }
        let header: String
        do {
            header = try OAuth1Signer(credentials: credentials).sign(
                method: "POST",
                url: url,
                nonce: OAuth1Signer.nonce(),
                timestamp: OAuth1Signer.timestamp(),
                extra: extra
            ).header
        } catch {
            return .failure(LoginError(.exchangeFailed, "cannot sign the request to \(endpoint): \(error)"))
        }
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: header)
        headers.add(name: "Accept", value: "application/x-www-form-urlencoded")
        let request = UpstreamFetcher.Request(
            method: "POST",
            url: url,
            headers: headers,
            body: [],
            allowPlainHTTP: self.provider.allowInsecureEndpoints,
            caFile: self.provider.caFile,
            connectTimeout: self.limits.upstreamConnectTimeoutSeconds,
            timeout: deadline.requestSeconds(atMost: self.limits.tokenRequestSeconds),
            headTimeout: self.limits.endpointHeadSeconds,
            idleTimeout: self.limits.endpointIdleSeconds,
            maximumBodyBytes: Self.maximumAnswerBytes
        )
        let step = "obtaining \(what) from \(endpoint)"
        let response: UpstreamResponse
        switch deadline.wait(step, { done in self.fetcher.fetch(request, completion: done) }) {
        case .failure(let error):
            return .failure(error)
        case .success(.failure(let error)):
            let failure = LoginError(.exchangeFailed, "cannot obtain \(what) from \(endpoint): \(error.message)")
            return .failure(deadline.explain(failure, during: step))
        case .success(.success(let answered)):
            response = answered
        }
        // Providers answer form-encoded whatever Content-Type they label it with.
        // One decoder, strict: a pair that cannot be read could be a second `oauth_token`.
        let pairs = String(validating: response.body, as: UTF8.self).flatMap { FormEncoding.decode($0) }
        guard (200..<300).contains(response.status) else {
            let problem =
                pairs.flatMap { OAuth1Problem.named(inForm: $0) }
                ?? OAuth1Problem.named(in: response.headers.values("WWW-Authenticate"))
            return .failure(
                LoginError(
                    .exchangeFailed,
                    "\(endpoint) refused \(what) with status \(response.status)"
                        + (problem.map { " (oauth_problem=\($0))" } ?? "")
                )
            )
        }
        guard let pairs else {
            return .failure(LoginError(.exchangeFailed, "\(endpoint) answered with a malformed form (\(what))"))
        }
        return .success(pairs)
    }

    /// `oauth_token` and `oauth_token_secret` of an answer from `endpoint`, each present once.
    static func credentialPair(
        _ pairs: [(String, String)],
        from endpoint: String
    ) -> Result<(token: String, secret: String), LoginError> {
        guard let token = FormEncoding.single("oauth_token", in: pairs),
            let secret = FormEncoding.single("oauth_token_secret", in: pairs)
        else {
            return .failure(
                LoginError(
                    .exchangeFailed,
                    "the \(endpoint) answer lacks oauth_token or oauth_token_secret, or repeats one"
                )
            )
        }
        // The token goes into every request's header (percent-encoded) and both into the
        // store: bounded, and without control characters a hand reading the store trips on.
        for value in [token, secret]
        where value.count > Self.maximumCredentialLength
            || value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            return .failure(
                LoginError(
                    .exchangeFailed,
                    "the \(endpoint) answer carries a token or secret longer than \(Self.maximumCredentialLength) characters or with control characters"
                )
            )
        }
        guard !token.isEmpty else {
            return .failure(LoginError(.exchangeFailed, "the \(endpoint) answer carries an empty oauth_token"))
        }
        return .success((token, secret))
    }
}
