@testable import TokenProxyServer

/// A handler that answers nothing by itself: it keeps each exchange for the test, which
/// drives it inside ``EmbeddedConnection/run(_:)``, and records how each one ended.
///
/// `@unchecked Sendable`: it is touched only holding the embedded connection's context, on
/// the test's thread.
final class HeldExchanges: HTTPExchangeHandler, @unchecked Sendable {
    /// The exchanges in the order they started.
    private(set) var exchanges: [HTTPExchange] = []
    /// How each ended, by index: `true` finished, `false` aborted or cut off; absent while open.
    private(set) var completions: [Int: Bool] = [:]
    /// The indexes of the exchanges whose `onClose` ran (the connection ended first).
    private(set) var closed: [Int] = []
    /// Body events each exchange received, when ``readsBodies`` is set.
    private(set) var bodies: [Int: [RequestBodyEvent]] = [:]
    /// Whether each exchange's body is read as soon as it starts.
    let readsBodies: Bool

    init(readsBodies: Bool = false) {
        self.readsBodies = readsBodies
    }

    func handle(_ exchange: HTTPExchange) {
        let index = self.exchanges.count
        self.exchanges.append(exchange)
        exchange.onClose = { [unowned self] in self.closed.append(index) }
        exchange.observer = CompletionObserver { [unowned self] finished in self.completions[index] = finished }
        if self.readsBodies {
            exchange.readBody { [unowned self] event in self.bodies[index, default: []].append(event) }
        }
    }

    /// The latest exchange.
    var last: HTTPExchange? { self.exchanges.last }
}

/// An exchange observer that hands how the exchange ended to `completed`.
final class CompletionObserver: HTTPExchangeObserver {
    private let completed: (_ finished: Bool) -> Void

    init(_ completed: @escaping (_ finished: Bool) -> Void) {
        self.completed = completed
    }

    func exchangeCompleted(_ exchange: HTTPExchange, finished: Bool) {
        self.completed(finished)
    }
}
