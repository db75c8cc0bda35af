/// Relays a transfer's response to a client exchange: each delivery is one hop to the
/// connection's queue and one flush, and a client that cannot keep up pauses the transfer.
struct ExchangeSink: CurlResponseSink {
    /// The client exchange, confined to its connection's queue.
    let exchange: QueueBound<HTTPExchange>
    /// Asked on the exchange's queue when the response head is a 401: true means the answer
    /// is dropped (not relayed) so the request can be replayed.
    let interceptUnauthorized: @Sendable () -> Bool
    /// Called once a dropped answer has ended.
    let onSwallowedResponseEnd: @Sendable () -> Void
    /// Called on the exchange's queue when the transfer ended.
    let onComplete: @Sendable (CurlTransferOutcome) -> Void
    /// Whether this transfer's answer is being dropped; set and read on the exchange's queue.
    private let swallowing = SwallowFlag()

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
        let swallowing = self.swallowing
        let intercept = self.interceptUnauthorized
        let swallowedEnd = self.onSwallowedResponseEnd
        self.exchange.execute { exchange in
            if swallowing.value || (delivery.head?.status == 401 && intercept()) {
                swallowing.value = true
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
            if !writable {
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

/// A flag owned by one exchange's queue (only read and written there), shared by the copies
/// of a sink; `@unchecked Sendable` because the queue, not a lock, serializes access.
final class SwallowFlag: @unchecked Sendable {
    var value = false
}
