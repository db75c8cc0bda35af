import Dispatch
import Foundation
import TokenProxyConfiguration
import TokenProxyHTTP
import TokenProxySupport
import TokenProxyUpstream

/// Sends token requests for one provider (RFC 6749 §3.2): the form body, client
/// authentication, the provider's extra parameters and headers, and retries of transient
/// failures (connect errors, timeouts, 5xx, 429) with exponential backoff and full jitter,
/// honouring Retry-After, within the caller's deadline. Permanent OAuth errors
/// (`invalid_client`, `invalid_grant`, …) are never retried.
struct TokenEndpointClient: Sendable {
    /// A failed token request: the client's error, and the OAuth `error` code when the
    /// endpoint sent one (a grant reacts to `invalid_grant`).
    struct Failure: Error, Sendable {
        var error: ProxyError
        var oauthError: String?
        /// The `error_description`, when sent.
        var errorDescription: String? = nil
        /// The endpoint's Retry-After in seconds, when its last answer asked for one: the
        /// provider waits at least that long before asking again.
        var retryAfter: Double? = nil
    }

    /// A successful answer and when its request was sent, for counting the expiry.
    struct Issued: Sendable {
        var response: TokenResponse
        var sentAt: ContinuousClock.Instant
    }

    let provider: ProviderConfiguration
    let fetcher: UpstreamFetcher
    let connectTimeout: Double
    /// How long an answer's head may take, and its body pause (`limits.endpoint_idle_seconds`).
    let headTimeout: Double
    let idleTimeout: Double
    /// The provider's discovery document, when it names an `issuer` and no `token_url`.
    let discovery: DiscoveryCache?

    /// A client for `provider`'s endpoints, connecting within `limits`' upstream connect timeout.
    init(provider: ProviderConfiguration, fetcher: UpstreamFetcher, limits: Limits) {
        self.provider = provider
        self.fetcher = fetcher
        self.connectTimeout = limits.upstreamConnectTimeoutSeconds
        self.headTimeout = limits.endpointHeadSeconds
        self.idleTimeout = limits.endpointIdleSeconds
        if let issuer = provider.issuer {
            self.discovery = DiscoveryCache(
                issuer: issuer,
                allowPlainHTTP: provider.allowInsecureEndpoints,
                caFile: provider.caFile,
                fetcher: fetcher,
                requestSeconds: limits.tokenRequestSeconds,
                headSeconds: limits.endpointHeadSeconds,
                idleSeconds: limits.endpointIdleSeconds
            )
        } else {
            self.discovery = nil
        }
    }

    /// The provider's endpoints: those configured, the rest from discovery when an `issuer`
    /// is configured (discovery is skipped when nothing is missing).
    func endpoints(completion: @escaping @Sendable (Result<DiscoveredEndpoints, ProxyError>) -> Void) {
        let configured = DiscoveredEndpoints(
            issuer: self.provider.issuer,
            tokenEndpoint: self.provider.tokenURL,
            authorizationEndpoint: self.provider.authorizationURL,
            deviceAuthorizationEndpoint: self.provider.deviceAuthorizationURL,
            revocationEndpoint: self.provider.revocationURL
        )
        let needed: Bool
        switch self.provider.grant {
        case .authorizationCode: needed = configured.authorizationEndpoint == nil || configured.tokenEndpoint == nil
        case .deviceCode: needed = configured.deviceAuthorizationEndpoint == nil || configured.tokenEndpoint == nil
        default: needed = configured.tokenEndpoint == nil
        }
        guard let discovery = self.discovery, needed || self.provider.grant.isInteractive else {
            completion(.success(configured))
            return
        }
        discovery.endpoints { result in
            completion(
                result.map(self.preferringMTLSAliases).map { discovered in
                    DiscoveredEndpoints(
                        issuer: discovered.issuer,
                        issParameterSupported: discovered.issParameterSupported,
                        tokenEndpoint: configured.tokenEndpoint ?? discovered.tokenEndpoint,
                        authorizationEndpoint: configured.authorizationEndpoint ?? discovered.authorizationEndpoint,
                        deviceAuthorizationEndpoint: configured.deviceAuthorizationEndpoint
                            ?? discovered.deviceAuthorizationEndpoint,
                        revocationEndpoint: configured.revocationEndpoint ?? discovered.revocationEndpoint
                    )
                }
            )
        }
    }

    private static let baseDelay = 0.25
    private static let maximumDelay = 5.0

    /// Requests a token with `parameters` (grant-specific), answering before `deadline`. A
    /// `Retry-After` longer than `longestRetryAfter` seconds ends the request at once (the
    /// proxy's sources remember the failure that long instead of holding their requests);
    /// nil waits for any that ends before the deadline (a login, a command). Once
    /// `cancellation` fires, the transfer in flight is stopped, no retry starts, and
    /// `completion` may never run (the canceller answers its own waiters).
    ///
    /// With `proof`, every attempt carries a fresh DPoP proof (RFC 9449 §5), and an answer
    /// 400 `use_dpop_nonce` (§8) is followed at once by one more attempt with the nonce it gave.
    func request(
        _ parameters: [(String, String)],
        deadline: ContinuousClock.Instant,
        longestRetryAfter: Double? = nil,
        cancellation: CancellationSignal? = nil,
        proof: DPoPBinding? = nil,
        completion: @escaping @Sendable (Result<Issued, Failure>) -> Void
    ) {
        let bounds = Bounds(
            deadline: deadline,
            longestRetryAfter: longestRetryAfter,
            cancellation: cancellation,
            proof: proof
        )
        if let tokenURL = self.provider.tokenURL {
            self.request(parameters, tokenURL: tokenURL, bounds: bounds, completion: completion)
            return
        }
        self.endpoints { result in
            switch result {
            case .success(let endpoints):
                guard let tokenURL = endpoints.tokenEndpoint else {
                    let message = self.discovery == nil ? "no token_url" : "the issuer publishes no token_endpoint"
                    completion(.failure(Failure(error: self.error(message))))
                    return
                }
                self.request(parameters, tokenURL: tokenURL, bounds: bounds, completion: completion)
            case .failure(let error):
                completion(.failure(Failure(error: self.error(error.message))))
            }
        }
    }

    /// Sends one form POST to `url` with the provider's client authentication and no retry:
    /// the device authorization request (RFC 8628 §3.1) and revocation (RFC 7009 §2.1).
    func post(
        _ parameters: [(String, String)],
        to url: String,
        timeout: Double,
        completion: @escaping @Sendable (Result<UpstreamResponse, ProxyError>) -> Void
    ) {
        let deadline = ContinuousClock.now + BoundedSeconds.duration(timeout)
        switch self.build(tokenURL: url, parameters: parameters, deadline: deadline) {
        case .failure(let error):
            completion(.failure(error))
        case .success(var request):
            request.timeout = timeout
            self.fetcher.fetch(request, completion: completion)
        }
    }

    /// How long one token request may go on, which `Retry-After` it waits for, and what
    /// stops it early.
    private struct Bounds: Sendable {
        var deadline: ContinuousClock.Instant
        var longestRetryAfter: Double?
        var cancellation: CancellationSignal?
        /// The key and nonces of DPoP proofs, when the provider binds its tokens.
        var proof: DPoPBinding?
    }

    private func request(
        _ parameters: [(String, String)],
        tokenURL: String,
        bounds: Bounds,
        completion: @escaping @Sendable (Result<Issued, Failure>) -> Void
    ) {
        let request: UpstreamFetcher.Request
        switch self.build(tokenURL: tokenURL, parameters: parameters, deadline: bounds.deadline) {
        case .failure(let error):
            completion(.failure(Failure(error: error)))
            return
        case .success(let built):
            request = built
        }
        self.attempt(request, number: 0, nonceRetried: false, bounds: bounds, completion: completion)
    }

    private func attempt(
        _ request: UpstreamFetcher.Request,
        number: Int,
        nonceRetried: Bool,
        bounds: Bounds,
        completion: @escaping @Sendable (Result<Issued, Failure>) -> Void
    ) {
        if bounds.cancellation?.isCancelled == true {
            return
        }
        let deadline = bounds.deadline
        let sentAt = ContinuousClock.now
        var bounded = request
        bounded.timeout = max(0.001, Double((deadline - sentAt).milliseconds) / 1000)
        if let binding = bounds.proof {
            // A new proof for every attempt: a server refuses a `jti` it has seen (RFC 9449 §11.1).
            switch binding.proof(method: "POST", url: request.url, accessToken: nil) {
            case .success(let proof):
                bounded.headers.replaceOrAdd(name: "DPoP", value: proof)
            case .failure(let failure):
                completion(.failure(Failure(error: self.error(failure.description))))
                return
            }
        }
        let headTimeout = bounded.headTimeout
        let sent = bounded
        self.fetcher.fetch(sent, cancellation: bounds.cancellation) { result in
            var gaveNonce = false
            if let binding = bounds.proof, case .success(let response) = result,
                let nonce = response.headers.first("DPoP-Nonce")
            {
                gaveNonce = binding.nonces.record(nonce, from: request.url)
            }
            let retryAfter: Double?
            var failure: Failure
            switch result {
            case .failure(let transport):
                retryAfter = nil
                // The transport's words are about "the upstream"; here the peer is the token
                // endpoint.
                let message =
                    transport.code == .upstreamTimeout
                    ? "the token endpoint sent no answer within \(headTimeout) s "
                        + "(the longer of limits.endpoint_idle_seconds and token_wait_seconds)"
                    : "cannot reach the token endpoint: \(transport.message)"
                failure = Failure(error: self.error(message))
            case .success(let response):
                switch TokenResponseParser.parse(
                    status: response.status,
                    body: response.body,
                    contentType: response.headers.first("Content-Type"),
                    acceptsDPoP: bounds.proof != nil
                ) {
                case .success(let token):
                    completion(.success(Issued(response: token, sentAt: sentAt)))
                    return
                case .failure(let endpointError):
                    // Only failures need the secrets the request carried, to take them out.
                    let secrets = self.secrets(in: sent)
                    failure = Failure(
                        error: self.error(Redaction.redact(endpointError.message, secrets)),
                        oauthError: endpointError.error.map { Redaction.redact($0, secrets) },
                        errorDescription: endpointError.description.map { Redaction.redact($0, secrets) }
                    )
                    if endpointError.error == "use_dpop_nonce", let binding = bounds.proof, !nonceRetried, gaveNonce {
                        // RFC 9449 §8: the server wants a nonce, and gave one; not a failure to
                        // back off from.
                        binding.nonceRetried(at: .tokenEndpoint)
                        self.attempt(
                            request,
                            number: number,
                            nonceRetried: true,
                            bounds: bounds,
                            completion: completion
                        )
                        return
                    }
                    if endpointError.isPermanent {
                        completion(.failure(failure))
                        return
                    }
                    retryAfter = Self.retryAfter(response)
                    failure.retryAfter = retryAfter
                }
            }
            // Full jitter: a random delay up to the exponential bound, so many proxies that
            // failed together do not retry together.
            let bound = min(Self.maximumDelay, Self.baseDelay * pow(2, Double(number)))
            let delay = retryAfter ?? Double.random(in: 0...bound)
            // A Retry-After beyond the deadline fails now: the request cannot wait that long.
            // So does one beyond what the caller waits for: the proxy's requests would wait
            // out their whole token wait, where the remembered failure answers them at once.
            guard ContinuousClock.now + BoundedSeconds.duration(delay) < deadline,
                (retryAfter ?? 0) <= (bounds.longestRetryAfter ?? .infinity)
            else {
                completion(.failure(failure))
                return
            }
            DeadlineScheduler.shared.schedule(at: .now + BoundedSeconds.duration(delay)) {
                self.attempt(request, number: number + 1, nonceRetried: false, bounds: bounds, completion: completion)
            }
        }
    }

    /// The secrets `request` carried, for ``Redaction``: its secret form parameters, the
    /// client secret, the HTTP Basic credential made of the client id and secret, and a DPoP
    /// proof.
    func secrets(in request: UpstreamFetcher.Request?) -> [String] {
        let secret = (try? self.provider.clientSecret?.resolve()).flatMap { $0 }
        var secrets = Redaction.secrets(inForm: request?.body, clientSecret: secret)
        if let secret {
            secrets += Redaction.basicCredentials(clientID: self.provider.clientID ?? "", secret: secret)
        }
        if let proof = request?.headers.first("DPoP") {
            secrets.append(proof)
        }
        if let authorization = request?.headers.first("Authorization") {
            secrets.append(authorization)
            if let space = authorization.firstIndex(of: " ") {
                secrets.append(String(authorization[authorization.index(after: space)...]))
            }
        }
        return secrets
    }

    /// Retry-After in seconds (RFC 9110 §10.2.3), on 429 and 503 answers: delta-seconds or
    /// an HTTP-date, finite and clamped (``BoundedSeconds/retryAfter(_:now:)``); a value
    /// that is neither is ignored and the usual backoff applies.
    static func retryAfter(_ response: UpstreamResponse) -> Double? {
        guard response.status == 429 || response.status == 503, let value = response.headers.first("Retry-After")
        else { return nil }
        return BoundedSeconds.retryAfter(value)
    }

    private func build(
        tokenURL: String,
        parameters: [(String, String)],
        deadline: ContinuousClock.Instant
    ) -> Result<UpstreamFetcher.Request, ProxyError> {
        var form = parameters
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        headers.add(name: "Accept", value: "application/json")
        let clientID = self.provider.clientID ?? ""
        let secret: String?
        do {
            secret = try self.provider.clientSecret?.resolve()
        } catch {
            return .failure(self.error("the client_secret cannot be read: \(error)"))
        }
        switch self.provider.clientAuth {
        case .clientSecretBasic:
            // RFC 6749 §2.3.1: id and secret are form-encoded before Basic encoding.
            let pair = FormEncoding.encode(clientID) + ":" + FormEncoding.encode(secret ?? "")
            headers.add(name: "Authorization", value: "Basic " + Data(pair.utf8).base64EncodedString())
        case .clientSecretPost:
            form.append(("client_id", clientID))
            form.append(("client_secret", secret ?? ""))
        case .none:
            if !clientID.isEmpty {
                form.append(("client_id", clientID))
            }
        case .tlsClientAuth, .selfSignedTLSClientAuth:
            // RFC 8705 §2: the certificate presented authenticates; `client_id` names the client.
            form.append(("client_id", clientID))
        case .privateKeyJWT:
            // RFC 7523 §2.2: a short-lived assertion signed with the client's key.
            do {
                let pem = try self.provider.clientAssertionKey?.resolve() ?? ""
                let signer = try JWTSigner(pem: pem, algorithm: self.provider.jwtAlgorithm)
                let now = Int(Date().timeIntervalSince1970)
                let assertion = try signer.sign([
                    "iss": clientID, "sub": clientID, "aud": tokenURL, "iat": now, "exp": now + 300,
                    "jti": SecureRandom.hex(16),
                ])
                form.append(("client_id", clientID))
                form.append(("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"))
                form.append(("client_assertion", assertion))
            } catch {
                return .failure(self.error("cannot make the client assertion: \(error)"))
            }
        }
        for name in self.provider.tokenRequestParams.keys.sorted() {
            if let value = self.provider.tokenRequestParams[name] {
                form.append((name, value))
            }
        }
        for name in self.provider.tokenRequestHeaders.keys.sorted() {
            if let value = self.provider.tokenRequestHeaders[name] {
                headers.replaceOrAdd(name: name, value: value)
            }
        }
        return self.presentingClientCertificate(
            UpstreamFetcher.Request(
                method: "POST",
                url: tokenURL,
                headers: headers,
                body: Array(FormEncoding.encode(form).utf8),
                allowPlainHTTP: self.provider.allowInsecureEndpoints,
                caFile: self.provider.caFile,
                connectTimeout: self.connectTimeout,
                headTimeout: self.headTimeout,
                idleTimeout: self.idleTimeout
            )
        )
    }

    private func error(_ message: String) -> ProxyError {
        ProxyError(.tokenUnavailable, message, provider: self.provider.name)
    }
}
