import Foundation

/// One exchange as its client saw it: the status, the proxy's error code
/// (`X-Tokenproxy-Error`), and whether the body arrived whole by its framing.
struct ClientOutcome: Equatable, CustomStringConvertible {
    /// The response's status.
    var status: Int
    /// `X-Tokenproxy-Error`, when the proxy made the answer.
    var error: String?
    /// Whether the body was whole by its framing.
    var complete: Bool

    /// A whole answer with this status and error code.
    static func answered(_ status: Int, _ error: String? = nil) -> ClientOutcome {
        ClientOutcome(status: status, error: error, complete: true)
    }

    /// Status, error code and a broken body, as assertion messages show them.
    var description: String { "\(self.status) \(self.error ?? "-")\(self.complete ? "" : " (broken body)")" }
}

extension TestClient {
    /// Reads one answer to a GET, its body through its framing; a connection that ends
    /// before the body does gives an incomplete outcome, a read past the socket timeout throws.
    func readOutcome() throws -> ClientOutcome {
        let head = try self.readHead()
        let framed = head.header("Content-Length") != nil || head.header("Transfer-Encoding") != nil
        let complete = try !framed || self.streamBody(of: head) { _ in }
        return ClientOutcome(status: head.status, error: head.header("X-Tokenproxy-Error"), complete: complete)
    }

    /// Sends `GET target` on `count` new connections to `port` before reading any answer (so
    /// all are in the proxy at once), runs `during` meanwhile, then reads every answer. Each
    /// read is bounded by `timeout` seconds.
    static func concurrentGets(
        port: UInt16,
        count: Int,
        target: String,
        timeout: Int = 15,
        during: () throws -> Void = {}
    ) throws -> [ClientOutcome] {
        var clients: [TestClient] = []
        for _ in 0..<count {
            let client = try TestClient(port: port, timeout: timeout)
            try client.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\n\r\n")
            clients.append(client)
        }
        try during()
        return try clients.map { try $0.readOutcome() }
    }

    /// The outcome of one `GET target` on a new connection to `port`.
    static func outcome(port: UInt16, target: String, timeout: Int = 15) throws -> ClientOutcome {
        try Self.concurrentGets(port: port, count: 1, target: target, timeout: timeout)[0]
    }
}
