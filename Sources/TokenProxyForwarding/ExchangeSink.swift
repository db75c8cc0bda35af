import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// Brings a transfer's response to a client exchange: each delivery runs in the connection's
/// context (in place when the connection is idle, otherwise one hop to its queue).
///
/// The sink only brings each delivery into the exchange's context, to the request's
/// ``ForwardingAttempt``, whose state machine decides whether it is relayed, dropped or
/// ends in another attempt.
///
/// A class: the transfer holds it and each delivery's closure captures it, one reference
/// each instead of a copy of its fields.
final class ExchangeSink: CurlResponseSink {
    /// The client exchange, confined to its connection's context.
    let exchange: QueueBound<HTTPExchange>
    /// The request whose transfer this is; its deliveries are dropped once it is gone (its
    /// exchange ended).
    private let owner: QueueBound<WeakReference<ForwardingAttempt>>
    /// The order of this transfer's deliveries and resumes.
    private let producer = OrderedProducer()

    /// A sink for `owner`'s transfer.
    init(exchange: QueueBound<HTTPExchange>, owner: QueueBound<WeakReference<ForwardingAttempt>>) {
        self.exchange = exchange
        self.owner = owner
    }

    /// Runs `delivery` in the exchange's context, handed to the owner.
    func deliver(_ delivery: CurlDelivery, from transfer: CurlTransfer) {
        self.run { [self] exchange in
            guard let attempt = self.owner.value.object else {
                // The exchange ended: nothing is relayed, and the transfer is never held up.
                transfer.bodyDelivered(delivery.bodyBytes, consumerWritable: true)
                return
            }
            attempt.deliver(delivery, from: transfer, to: exchange)
        }
    }

    /// Resumes reading the client's body, in the same order as the deliveries.
    func resumeRequestBody() {
        self.run { $0.resumeBody() }
    }

    /// Runs `body` in the exchange's context: in place on the engine's thread when the
    /// connection is idle, otherwise through its queue. Deliveries and body resumes share one
    /// order, so an answer run in place never overtakes a resume still waiting on the queue
    /// (which would end the exchange before the connection took the end of the request body,
    /// and close a connection that could have been kept alive).
    private func run(_ body: @escaping @Sendable (HTTPExchange) -> Void) {
        self.exchange.executeHereIfIdle(for: self.producer, body)
    }
}
