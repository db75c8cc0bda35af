import Synchronization
import TokenProxyConfiguration
import TokenProxyHTTP
import TokenProxySupport

/// Sends the proxy's own HTTP requests through the same libcurl engine as client traffic,
/// with the same rules: verified TLS, no redirects, https unless allowed, no environment
/// proxy. The response body is buffered up to a limit.
package struct UpstreamFetcher: Sendable {
    private let engine: CurlEngine

    /// Creates a fetcher over `engine`.
    package init(engine: CurlEngine) {
        self.engine = engine
    }

    /// What to send.
    package struct Request: Sendable {
        /// The method.
        package var method: String
        /// The absolute URL.
        package var url: String
        /// The header fields.
        package var headers: HTTPHeaders
        /// The body, if any.
        package var body: [UInt8]?
        /// Whether `http://` is allowed (`allow_insecure_endpoints`).
        package var allowPlainHTTP: Bool
        /// Trust for the endpoint (`ca_file`), else the system store.
        package var caFile: String?
        /// Connect timeout in seconds.
        package var connectTimeout: Double
        /// The request's whole life in seconds: connecting, the TLS handshake, the head and
        /// the last byte of the body must all be done within it.
        package var timeout: Double
        /// How long the head may take once the request is sent, in seconds (else 504
        /// `upstream_timeout`): an identity provider may think a while before it answers.
        package var headTimeout: Double
        /// The body's idle limit in seconds (`limits.endpoint_idle_seconds`): no gap between
        /// its bytes may be longer (else the answer broke off).
        package var idleTimeout: Double
        /// Largest body accepted; a larger one fails the request.
        package var maximumBodyBytes: Int
        /// The PEM client certificate presented in the TLS handshake (RFC 8705), if any.
        package var clientCertificatePEM: String? = nil
        /// The PEM private key of ``clientCertificatePEM``.
        package var clientKeyPEM: String? = nil

        /// Creates a request; the defaults suit token endpoints.
        package init(
            method: String,
            url: String,
            headers: HTTPHeaders = HTTPHeaders(),
            body: [UInt8]? = nil,
            allowPlainHTTP: Bool = false,
            caFile: String? = nil,
            connectTimeout: Double = 10,
            timeout: Double = 30,
            headTimeout: Double = Limits().endpointHeadSeconds,
            idleTimeout: Double = Limits().endpointIdleSeconds,
            maximumBodyBytes: Int = 1 << 20
        ) {
            self.method = method
            self.url = url
            self.headers = headers
            self.body = body
            self.allowPlainHTTP = allowPlainHTTP
            self.caFile = caFile
            self.connectTimeout = connectTimeout
            self.timeout = timeout
            self.headTimeout = headTimeout
            self.idleTimeout = idleTimeout
            self.maximumBodyBytes = maximumBodyBytes
        }
    }

    /// Sends `request`; `completion` runs once, on the engine, with the response or the error
    /// (502 `upstream_unreachable`, 504 `upstream_timeout` codes, for the caller to rewrap).
    /// When `cancellation` fires first, the transfer is stopped, its connection closed and its
    /// memory freed, and `completion` never runs: the caller that fired it answers for itself.
    package func fetch(
        _ request: Request,
        cancellation: CancellationSignal? = nil,
        completion: @escaping @Sendable (Result<UpstreamResponse, ProxyError>) -> Void
    ) {
        // libcurl frames the body itself (Content-Length from the upload size).
        var headers = request.headers
        headers.removeAll { UpstreamRequest.hopByHop.contains($0) }
        let upstreamRequest = UpstreamRequest(
            method: request.method,
            url: request.url,
            headers: headers,
            body: request.body.map { .length(Int64($0.count)) } ?? .none
        )
        let options = CurlTransfer.Options(
            allowPlainHTTP: request.allowPlainHTTP,
            caFile: request.caFile,
            clientCertificate: nil,
            clientKeyPEM: request.clientKeyPEM,
            clientCertificatePEM: request.clientCertificatePEM,
            connectTimeout: min(request.connectTimeout, request.timeout),
            firstByteTimeout: min(request.headTimeout, request.timeout),
            totalTimeout: request.timeout,
            idleTimeout: request.idleTimeout,
            // A token request is a POST: libcurl must not send it a second time by itself;
            // whether to ask again is the token client's decision.
            resendable: request.method == "GET" || request.method == "HEAD"
        )
        // The handler registered on `cancellation`, removed when the answer comes first
        // (`ended`: the answer came before the registration, which is then removed at once).
        let registration = Mutex<(handle: UInt64?, ended: Bool)>((nil, false))
        let sink = BufferingSink(limit: request.maximumBodyBytes, engine: self.engine) { result in
            let handle = registration.withLockedValue { state -> UInt64? in
                state.ended = true
                return state.handle
            }
            cancellation?.remove(handle)
            completion(result)
        }
        let transfer = CurlTransfer(
            engine: self.engine,
            request: upstreamRequest,
            options: options,
            sink: sink,
            route: nil,
            provider: nil
        )
        if let body = request.body {
            _ = transfer.appendBody(body)
            transfer.endBody()
        }
        self.engine.add(transfer)
        // After the add: the engine takes commands in order, so a cancel never overtakes it.
        let engine = self.engine
        let handle = cancellation?.onCancel { engine.cancel(transfer) }
        let ended = registration.withLockedValue { state -> Bool in
            state.handle = handle
            return state.ended
        }
        if ended {
            cancellation?.remove(handle)
        }
    }
}

/// Collects a response in memory, up to a limit.
private final class BufferingSink: CurlResponseSink, Sendable {
    private struct State {
        var head: HTTPResponseHead?
        var body: [UInt8] = []
        var done = false
    }

    private let limit: Int
    private let engine: CurlEngine
    private let completion: @Sendable (Result<UpstreamResponse, ProxyError>) -> Void
    private let state = Mutex(State())

    init(
        limit: Int,
        engine: CurlEngine,
        completion: @escaping @Sendable (Result<UpstreamResponse, ProxyError>) -> Void
    ) {
        self.limit = limit
        self.engine = engine
        self.completion = completion
    }

    func deliver(_ delivery: CurlDelivery, from transfer: CurlTransfer) {
        let result = self.state.withLockedValue { state -> Result<UpstreamResponse, ProxyError>? in
            guard !state.done else { return nil }
            if let head = delivery.head {
                state.head = head
            }
            state.body += delivery.body
            if state.body.count > self.limit {
                state.done = true
                return .failure(ProxyError(.upstreamUnreachable, "response larger than \(self.limit) bytes"))
            }
            switch delivery.end {
            case nil:
                return nil
            case .finish:
                state.done = true
                guard let head = state.head else {
                    return .failure(ProxyError(.upstreamUnreachable, "no response"))
                }
                return .success(UpstreamResponse(status: head.status, headers: head.headers, body: state.body))
            case .abort:
                state.done = true
                return .failure(
                    ProxyError(.upstreamUnreachable, "the answer broke off (the connection failed or went silent)")
                )
            case .fail(let error), .lostReusedConnection(let error):
                state.done = true
                return .failure(error)
            }
        }
        transfer.bodyDelivered(delivery.bodyBytes, consumerWritable: true)
        if let result {
            if case .failure = result, delivery.end == nil {
                self.engine.cancel(transfer)
            }
            self.completion(result)
        }
    }

    func resumeRequestBody() {}
}
