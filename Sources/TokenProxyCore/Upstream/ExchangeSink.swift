/// Relays a transfer's response to a client exchange: each delivery runs once on the
/// connection's queue (synchronously from an engine thread of its own, else as a hop) with
/// one flush, and a client that cannot keep up pauses the transfer.
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
        // From an engine thread of its own, the delivery runs on the connection's queue
        // without a hop: the bytes reach the client socket before the engine goes on, and no
        // Dispatch worker has to be woken for them.
        if transfer.deliversSynchronously {
            self.exchange.executeAndWait { self.apply(delivery, from: transfer, to: $0) }
        } else {
            self.exchange.execute { self.apply(delivery, from: transfer, to: $0) }
        }
    }

    /// Relays one delivery (on the exchange's queue).
    private func apply(_ delivery: CurlDelivery, from transfer: CurlTransfer, to exchange: HTTPExchange) {
        if self.swallowing.value || (delivery.head?.status == 401 && self.interceptUnauthorized()) {
            self.swallowing.value = true
            transfer.bodyDelivered(delivery.bodyBytes, consumerWritable: true)
            if delivery.end != nil {
                self.onSwallowedResponseEnd()
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
                self.onComplete(.finished)
            case .abort?:
                exchange.abort()
                self.onComplete(.aborted)
            case .fail(let error)?:
                exchange.respond(ErrorResponse.response(for: error))
                self.onComplete(.failed(error))
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

    func resumeRequestBody() {
        self.exchange.execute { $0.resumeBody() }
    }
}

/// A flag owned by one exchange's queue (only read and written there), shared by the copies
/// of a sink; `@unchecked Sendable` because the queue, not a lock, serializes access.
final class SwallowFlag: @unchecked Sendable {
    var value = false
}
