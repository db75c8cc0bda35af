/// Relays a transfer's response to a client exchange: each delivery is one hop to the
/// connection's queue and one flush, and a client that cannot keep up pauses the transfer.
struct ExchangeSink: CurlResponseSink {
    /// The client exchange, confined to its connection's queue.
    let exchange: QueueBound<HTTPExchange>
    /// Called on the exchange's queue when the transfer ended.
    let onComplete: @Sendable (CurlTransferOutcome) -> Void

    func deliver(_ delivery: CurlDelivery, from transfer: CurlTransfer) {
        let onComplete = self.onComplete
        self.exchange.execute { exchange in
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
