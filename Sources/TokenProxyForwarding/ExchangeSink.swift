import TokenProxyHTTP
import TokenProxyMetrics
import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// Relays a transfer's response to a client exchange: each delivery runs in the connection's
/// context (in place when the connection is idle, otherwise one hop to its queue) with
/// one flush, and a client that cannot keep up pauses the transfer.
///
/// A class: the transfer holds it and each delivery's closure captures it, one reference
/// each instead of a copy of every callback.
final class ExchangeSink: CurlResponseSink {
    /// The client exchange, confined to its connection's context.
    let exchange: QueueBound<HTTPExchange>
    /// Asked in the exchange's context when the response head is a 401: true means the answer
    /// is dropped (not relayed) so the request can be replayed.
    let interceptUnauthorized: @Sendable () -> Bool
    /// Asked in the exchange's context, before a replay is considered, when the response
    /// head is a 401: an error means the answer is dropped and the client gets that error
    /// instead (a provider that says the credential itself is refused).
    let refuseUnauthorized: @Sendable (HTTPResponseHead) -> ProxyError?
    /// Called once a dropped answer has ended.
    let onSwallowedResponseEnd: @Sendable () -> Void
    /// Asked in the exchange's context when the transfer failed on a reused connection before
    /// any answer (with the error the client would get): true means the request was sent
    /// again, and this transfer answers nothing.
    let resendAfterLostConnection: @Sendable (HTTPExchange, ProxyError) -> Bool
    /// Called in the exchange's context when the transfer ended.
    let onComplete: @Sendable (CurlTransferOutcome) -> Void
    /// What the sink changes as its deliveries run: the refusal, swallowing, their order.
    private let state = SinkState()

    init(
        exchange: QueueBound<HTTPExchange>,
        interceptUnauthorized: @escaping @Sendable () -> Bool = { false },
        refuseUnauthorized: @escaping @Sendable (HTTPResponseHead) -> ProxyError? = { _ in nil },
        onSwallowedResponseEnd: @escaping @Sendable () -> Void = {},
        resendAfterLostConnection: @escaping @Sendable (HTTPExchange, ProxyError) -> Bool = { _, _ in false },
        onComplete: @escaping @Sendable (CurlTransferOutcome) -> Void
    ) {
        self.exchange = exchange
        self.interceptUnauthorized = interceptUnauthorized
        self.refuseUnauthorized = refuseUnauthorized
        self.onSwallowedResponseEnd = onSwallowedResponseEnd
        self.resendAfterLostConnection = resendAfterLostConnection
        self.onComplete = onComplete
    }

    func deliver(_ delivery: CurlDelivery, from transfer: CurlTransfer) {
        self.run { [self] exchange in
            let state = self.state
            let onComplete = self.onComplete
            if !state.swallowing, let head = delivery.head, head.status == 401 {
                if let error = self.refuseUnauthorized(head) {
                    state.refusal = error
                    state.swallowing = true
                } else if self.interceptUnauthorized() {
                    state.swallowing = true
                }
            }
            if state.swallowing {
                transfer.bodyDelivered(delivery.bodyBytes, consumerWritable: true)
                if delivery.end != nil {
                    if let refusal = state.refusal {
                        exchange.respond(to: refusal)
                        onComplete(.failed(refusal))
                    } else {
                        self.onSwallowedResponseEnd()
                    }
                }
                return
            }
            if case .lostReusedConnection(let error)? = delivery.end, self.resendAfterLostConnection(exchange, error) {
                return
            }
            if delivery.resentByLibcurl {
                // libcurl sent the request again on a new connection by itself (idempotent
                // methods only: its second send of any other is stopped, CurlTransfer).
                exchange.logFields["resent"] = "true"
            }
            exchange.batch { exchange in
                if let head = delivery.head {
                    exchange.sendHead(head)
                }
                for part in delivery.body {
                    exchange.sendBody(part)
                }
                switch delivery.end {
                case .finish?:
                    exchange.finish()
                    onComplete(.finished)
                case .abort?:
                    exchange.logFields[ExchangeMetrics.upstreamErrorField] =
                        ProxyMetrics.UpstreamErrorKind.aborted.rawValue
                    exchange.abort()
                    onComplete(.aborted)
                case .fail(let error)?, .lostReusedConnection(let error)?:
                    exchange.logFields[ExchangeMetrics.upstreamErrorField] =
                        error.code == .upstreamTimeout ? "timeout" : "unreachable"
                    exchange.respond(to: error)
                    onComplete(.failed(error))
                case nil:
                    break
                }
            }
            guard delivery.bodyBytes > 0 else { return }
            let writable = exchange.isComplete || exchange.isWritable
            transfer.bodyDelivered(delivery.bodyBytes, consumerWritable: writable)
            if writable {
                // A hook an earlier delivery left is stale: this one found room.
                exchange.onWritable = nil
            } else {
                exchange.onWritable = {
                    exchange.onWritable = nil
                    transfer.consumerBecameWritable()
                }
            }
        }
    }

    func resumeRequestBody() {
        self.run { $0.resumeBody() }
    }

    /// Runs `body` in the exchange's context: in place on the engine's thread when the
    /// connection is idle, otherwise through its queue. Deliveries and body resumes share one
    /// order, so an answer run in place never overtakes a resume still waiting on the queue
    /// (which would end the exchange before the connection took the end of the request body,
    /// and close a connection that could have been kept alive).
    private func run(_ body: @escaping @Sendable (HTTPExchange) -> Void) {
        self.exchange.executeHereIfIdle(for: self.state.producer, body)
    }
}

/// The mutable state of a sink. `@unchecked Sendable`: `refusal` and `swallowing` are only
/// read and written in the exchange's context, whose gate serializes access.
final class SinkState: @unchecked Sendable {
    /// The error answered instead of a refused 401, once one was.
    var refusal: ProxyError?
    /// Whether this transfer's answer is being dropped.
    var swallowing = false
    /// The order of this transfer's deliveries and resumes.
    let producer = OrderedProducer()
}
