/// Relays a transfer's response to a client exchange: each delivery runs in the connection's
/// context (one hop to its queue) with one flush, and a client that cannot keep up pauses
/// the transfer.
struct ExchangeSink: CurlResponseSink {
    /// The client exchange, confined to its connection's context.
    let exchange: QueueBound<HTTPExchange>
    /// Asked in the exchange's context when the response head is a 401: true means the answer
    /// is dropped (not relayed) so the request can be replayed.
    let interceptUnauthorized: @Sendable () -> Bool
    /// Called once a dropped answer has ended.
    let onSwallowedResponseEnd: @Sendable () -> Void
    /// Called in the exchange's context when the transfer ended.
    let onComplete: @Sendable (CurlTransferOutcome) -> Void
    /// What the copies of this sink share.
    private let state = SinkState()

    init(
        exchange: QueueBound<HTTPExchange>,
        interceptUnauthorized: @escaping @Sendable () -> Bool = { false },
        onSwallowedResponseEnd: @escaping @Sendable () -> Void = {},
        onComplete: @escaping @Sendable (CurlTransferOutcome) -> Void
    ) {
        self.exchange = exchange
        self.interceptUnauthorized = interceptUnauthorized
        self.onSwallowedResponseEnd = onSwallowedResponseEnd
        self.onComplete = onComplete
    }

    func deliver(_ delivery: CurlDelivery, from transfer: CurlTransfer) {
        let onComplete = self.onComplete
        let state = self.state
        let intercept = self.interceptUnauthorized
        let swallowedEnd = self.onSwallowedResponseEnd
        // One hop to the connection's queue. Writing in place when the connection is idle
        // (`executeHereIfIdle(for:)` with an `OrderedProducer` per sink) saves a thread
        // wake-up per answer; it stays off while a fault seen only with it is unexplained
        // (docs/architecture.md, "The upstream engine").
        self.exchange.execute { exchange in
            if state.swallowing || (delivery.head?.status == 401 && intercept()) {
                state.swallowing = true
                transfer.bodyDelivered(delivery.bodyBytes, consumerWritable: true)
                if delivery.end != nil {
                    swallowedEnd()
                }
                return
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
                    exchange.abort()
                    onComplete(.aborted)
                case .fail(let error)?:
                    exchange.respond(ErrorResponse.response(for: error))
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
        self.exchange.execute { $0.resumeBody() }
    }
}

/// The state the copies of a sink share. `@unchecked Sendable`: `swallowing` is only read
/// and written in the exchange's context, whose gate serializes access.
final class SinkState: @unchecked Sendable {
    /// Whether this transfer's answer is being dropped.
    var swallowing = false
}
