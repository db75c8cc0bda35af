import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// Brings a transfer's response to a client exchange: each delivery runs in the connection's
/// context (in place when the connection is idle, otherwise one hop to its queue).
///
/// The sink only brings each delivery into the exchange's context, to the request's
/// ``ForwardingAttempt``, whose state machine decides whether it is relayed, dropped or
/// ends in another attempt. It also maps the answer's `Location` back onto the proxy's path,
/// on the engine's thread, from the match and base it was made with (both immutable).
///
/// One object per transfer, holding inline what a delivery needs: the exchange, a weak
/// reference to its attempt and the count of deliveries queued. A delivery in place
/// allocates nothing; only one that must wait for the connection makes a closure.
final class ExchangeSink: CurlResponseSink {
    /// The client exchange, confined to its connection's context.
    let exchange: QueueBound<HTTPExchange>
    /// The request whose transfer this is; its deliveries are dropped once it is gone (its
    /// exchange ended).
    private let owner: WeakBound<ForwardingAttempt>
    /// The order of this transfer's deliveries and resumes.
    private let producer = OrderedProducer()
    /// The route and upstream base, for ``rewrittenLocation(_:)``.
    private let match: Router.Match
    private let base: UpstreamURL.Base

    /// A sink for `owner`'s transfer answering `exchange`.
    init(
        exchange: QueueBound<HTTPExchange>,
        owner: WeakBound<ForwardingAttempt>,
        match: Router.Match,
        base: UpstreamURL.Base
    ) {
        self.exchange = exchange
        self.owner = owner
        self.match = match
        self.base = base
    }

    func deliver(_ delivery: CurlDelivery, from transfer: CurlTransfer) {
        let context = self.exchange.context
        if self.producer.runHereIfIdle(on: context, { self.deliverHere(delivery, from: transfer) }) {
            return
        }
        self.producer.willQueue()
        context.async {
            self.producer.started()
            self.deliverHere(delivery, from: transfer)
        }
    }

    func resumeRequestBody() {
        let context = self.exchange.context
        if self.producer.runHereIfIdle(on: context, { self.exchange.value.resumeBody() }) {
            return
        }
        self.producer.willQueue()
        context.async {
            self.producer.started()
            self.exchange.value.resumeBody()
        }
    }

    /// `nil` for a `Location` the rewrite leaves as it is (another origin, another path), so
    /// that the head's fields are not written anew for nothing.
    func rewrittenLocation(_ location: String) -> String? {
        let rewritten = LocationRewrite.rewrite(location, match: self.match, base: self.base)
        return rewritten == location ? nil : rewritten
    }

    /// In the exchange's context: the delivery to the attempt, or, once it is gone, nothing
    /// relayed and the transfer never held up.
    private func deliverHere(_ delivery: CurlDelivery, from transfer: CurlTransfer) {
        guard let attempt = self.owner.object else {
            transfer.bodyDelivered(delivery.bodyBytes, consumerWritable: true)
            return
        }
        attempt.deliver(delivery, from: transfer, to: self.exchange.value)
    }
}
