import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An upstream on loopback that answers each request with hand-written bytes, for framing no
/// well-behaved server produces (conflicting lengths, bodies longer or shorter than
/// announced). Each connection serves one request: the answer is written, then the socket is
/// closed, so a bad answer can never reach another request over the same upstream connection.
final class RawUpstream: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let answer: @Sendable (_ requestHead: String) -> [UInt8]

    /// Listens on an ephemeral loopback port; `answer` maps a request head (request line and
    /// fields, as text) to the bytes sent back.
    init(answer: @escaping @Sendable (_ requestHead: String) -> [UInt8]) throws {
        self.answer = answer
        let (listener, port) = try LoopbackSocket.listening()
        self.listener = listener
        self.port = port
        Thread.detachNewThread {
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread { Self.serve(client, answer: answer) }
            }
        }
    }

    /// The text of an answer: lines joined with CRLF, then `body` as it is.
    static func answer(_ lines: [String], body: String = "") -> [UInt8] {
        Array((lines.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8)
    }

    private static func serve(_ client: Int32, answer: (String) -> [UInt8]) {
        defer { close(client) }
        var request: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let end = Array("\r\n\r\n".utf8)
        while request.firstRange(of: end) == nil {
            let count = read(client, &chunk, chunk.count)
            guard count > 0 else { return }
            request += chunk[..<count]
        }
        let bytes = answer(String(decoding: request, as: UTF8.self))
        guard LoopbackSocket.sendAll(client, bytes) else { return }
        // Let the proxy read everything before the connection ends.
        shutdown(client, Int32(SHUT_WR))
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while read(client, &chunk, chunk.count) > 0 {}
    }

    deinit {
        shutdown(self.listener, Int32(SHUT_RDWR))
        close(self.listener)
    }
}
