import Foundation
import Synchronization
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#endif

/// A provider's endpoint on loopback for the login deadline tests: each request path gets
/// a complete answer, a response head and then silence, or no answer at all. A stalled
/// connection is held until its client gives up and closes it.
final class LoginStallingEndpoint: @unchecked Sendable {
    /// How a path is answered.
    enum Behaviour: Sendable {
        /// A complete answer, then the connection closes.
        case answer(status: Int, contentType: String, body: String)
        /// A head announcing a body that never comes.
        case headThenSilence
        /// Nothing: the request is read and left unanswered.
        case silence
    }

    let port: UInt16
    private let listener: Int32
    private let seen = Record()

    /// The paths requested, shared with the serving threads.
    private final class Record: Sendable {
        let paths = Mutex<[String]>([])
    }

    /// Listens on an ephemeral loopback port; `route` says how each request path is answered.
    init(route: @escaping @Sendable (_ path: String) -> Behaviour) throws {
        let (listener, port) = try LoopbackSocket.listening()
        self.listener = listener
        self.port = port
        Thread.detachNewThread { [seen] in
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread { Self.serve(client, route: route, seen: seen) }
            }
        }
    }

    /// `http://127.0.0.1:PORT`.
    var origin: String { "http://127.0.0.1:\(self.port)" }

    /// The paths requested so far, in order.
    var paths: [String] { self.seen.paths.withLockedValue { $0 } }

    private static func serve(
        _ client: Int32,
        route: (String) -> Behaviour,
        seen: Record
    ) {
        defer { close(client) }
        var request: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while request.firstRange(of: Array("\r\n\r\n".utf8)) == nil {
            let count = read(client, &chunk, chunk.count)
            guard count > 0 else { return }
            request += chunk[..<count]
        }
        let line = String(decoding: request.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
        let target = line.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
        let path = String(target.prefix { $0 != "?" })
        seen.paths.withLockedValue { $0.append(path) }
        switch route(path) {
        case .answer(let status, let contentType, let body):
            let head = "HTTP/1.1 \(status) X\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\n"
            Self.send(client, Array((head + "Connection: close\r\n\r\n" + body).utf8))
            shutdown(client, Int32(SHUT_WR))
        case .headThenSilence:
            Self.send(client, Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n".utf8))
        case .silence:
            break
        }
        // Held until the client closes its side.
        while read(client, &chunk, chunk.count) > 0 {}
    }

    private static func send(_ client: Int32, _ bytes: [UInt8]) {
        LoopbackSocket.sendAll(client, bytes)
    }

    deinit {
        shutdown(self.listener, Int32(SHUT_RDWR))
        close(self.listener)
    }
}
