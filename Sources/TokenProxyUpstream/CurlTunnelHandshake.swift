import CCurl
import TokenProxyHTTP
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The handshake of an upgraded request (RFC 9110 §7.8), blocking on the calling thread (a
/// `tp-tunnel` thread, never a connection's): connect with libcurl's connect-only mode
/// (DNS, TCP and TLS within the connect timeout), send the request head, and read the
/// upstream's answer head within the first-byte timeout. A `101` leaves the connection open
/// as a ``CurlTunnel``; any other answer is read whole (at most ``bodyLimit`` bytes) to be
/// relayed as an ordinary response.
package enum CurlTunnelHandshake {
    /// The largest answer head read, as for a request head.
    static let headLimit = 65_536
    /// The largest body of an answer other than `101` (an error page) that is relayed.
    package static let bodyLimit = 1_048_576

    /// What the upstream answered.
    package struct Answer: Sendable {
        /// The head for the client: for `101`, with the upstream's `Upgrade` and
        /// `Connection: Upgrade`; otherwise with its framing recomputed for ``body``.
        package var head: HTTPResponseHead
        /// The body of an answer other than `101`.
        package var body: [UInt8]
        /// For `101`: the open connection, and the tunnel's first bytes if the upstream sent
        /// any right after its head.
        package var tunnel: CurlTunnel?
        /// Bytes after the `101` head, the tunnel's first.
        package var leftover: [UInt8]
    }

    /// Why the handshake failed.
    package struct Failure: Error, Sendable {
        /// Whether a deadline passed (504) rather than the connection or the answer failing (502).
        package var timedOut: Bool
        /// For the client's error body and the log.
        package var message: String
    }

    /// Connects to `url`, sends `requestHead`, and reads the answer. `offered` are the
    /// protocols the request asked for: a `101` to another one is refused. `isHead` says the
    /// request was a HEAD, whose answer has no body whatever its fields say.
    package static func perform(
        url: String,
        options: CurlRequestSetup.Options,
        requestHead: [UInt8],
        offered: [String],
        isHead: Bool
    ) -> Result<Answer, Failure> {
        CurlGlobal.initialize()
        guard let easy = CurlEasy() else { return .failure(Failure(timedOut: false, message: "out of memory")) }
        var ok = easy.set(CURLOPT_URL, url)
        ok = CurlRequestSetup.configureConnection(easy, options) && ok
        // HTTP/1.1 only: an upgrade does not exist in HTTP/2 (RFC 9113 §8.6), and ALPN must
        // not offer it.
        ok = easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1)) && ok
        ok = easy.set(CURLOPT_CONNECT_ONLY, 1) && ok
        ok = easy.set(CURLOPT_CONNECTTIMEOUT_MS, CurlRequestSetup.milliseconds(options.connectTimeout)) && ok
        guard ok else {
            easy.cleanup()
            return .failure(Failure(timedOut: false, message: "libcurl refused the tunnel's options"))
        }
        let code = easy.perform()
        guard code == CURLE_OK, let socket = easy.activeSocket else {
            easy.cleanup()
            let message = code == CURLE_OK ? "no connection" : CurlTunnel.describe(code)
            return .failure(Failure(timedOut: code == CURLE_OPERATION_TIMEDOUT, message: message))
        }
        let tunnel = CurlTunnel(easy: easy, socket: socket)
        var reader = BlockingReader(
            tunnel: tunnel,
            deadline: .now + BoundedSeconds.duration(options.firstByteTimeout)
        )
        do throws(Failure) {
            try reader.sendAll(requestHead)
            let answer = try Self.readAnswer(&reader, tunnel: tunnel, offered: offered, isHead: isHead)
            if answer.tunnel == nil {
                tunnel.close()
            }
            return .success(answer)
        } catch {
            tunnel.close()
            return .failure(error)
        }
    }

    private static func readAnswer(
        _ reader: inout BlockingReader,
        tunnel: CurlTunnel,
        offered: [String],
        isHead: Bool
    ) throws(Failure) -> Answer {
        var parser = UpstreamResponseParser()
        parser.switchingProtocolsIsFinal = true
        var headBytes = 0
        reading: while true {
            let line = try reader.line(limit: Self.headLimit - headBytes)
            headBytes += line.count
            let result = line.withUnsafeBytes { parser.line(bytes: $0) }
            switch result {
            case .pending, .interim: continue
            case .complete: break reading
            case .invalid: throw Failure(timedOut: false, message: "the upstream's answer head is not valid HTTP")
            }
        }
        let upgrade = parser.value(of: "upgrade")
        var head = parser.head(requestIsHead: isHead, rewriteLocation: { _ in nil })
        if head.status == 101 {
            guard let protocols = upgrade, HTTPGrammar.isValidFieldValue(Array(protocols.utf8))
            else {
                throw Failure(timedOut: false, message: "the upstream switched protocols without naming one")
            }
            // RFC 9110 §7.8: the server switches to one the client offered; anything else
            // would hand the client a protocol it never asked for, past the route's list.
            let chosen = protocols.split(separator: ",").map { $0.trimmingHTTPWhitespace() }
            guard !chosen.isEmpty,
                chosen.allSatisfy({ token in offered.contains { $0.equalsIgnoringASCIICase(token) } })
            else {
                throw Failure(timedOut: false, message: "the upstream switched to a protocol the client did not offer")
            }
            head.headers.add(name: "Upgrade", value: protocols)
            head.headers.add(name: "Connection", value: "Upgrade")
            head.contentLength = nil
            return Answer(head: head, body: [], tunnel: tunnel, leftover: reader.takeBuffered())
        }
        if let problem = parser.framingProblem {
            throw Failure(timedOut: false, message: problem)
        }
        var body: [UInt8] = []
        if !head.forbidsBody && !isHead {
            if parser.hasTransferEncoding {
                body = try reader.chunkedBody(limit: Self.bodyLimit)
            } else if case .length(let length) = parser.declaredLength {
                guard length <= Int64(Self.bodyLimit) else {
                    throw Failure(timedOut: false, message: "the upstream's answer to the upgrade is over 1 MiB")
                }
                body = try reader.bytes(count: Int(length))
            } else {
                body = try reader.untilEnd(limit: Self.bodyLimit)
            }
        }
        head.contentLength = Int64(body.count)
        return Answer(head: head, body: body, tunnel: nil, leftover: [])
    }
}

/// Blocking reads and writes on a connect-only handle, each waiting in `poll` for at most
/// what is left until one deadline.
private struct BlockingReader {
    let tunnel: CurlTunnel
    let deadline: ContinuousClock.Instant
    private var buffer: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 16_384)

    init(tunnel: CurlTunnel, deadline: ContinuousClock.Instant) {
        self.tunnel = tunnel
        self.deadline = deadline
    }

    mutating func sendAll(_ bytes: [UInt8]) throws(CurlTunnelHandshake.Failure) {
        var offset = 0
        while offset < bytes.count {
            let outcome = bytes.withUnsafeBytes { self.tunnel.send(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            switch outcome {
            case .done(let count): offset += count
            case .wouldBlock: try self.wait(for: Int16(POLLOUT))
            case .ended: throw Self.failure("the upstream closed the connection")
            case .failed(let message): throw Self.failure(message)
            }
        }
    }

    /// Receives once more into the buffer; false at the end of input.
    private mutating func fill() throws(CurlTunnelHandshake.Failure) -> Bool {
        while true {
            let tunnel = self.tunnel
            let outcome = self.chunk.withUnsafeMutableBytes { tunnel.receive(into: $0) }
            switch outcome {
            case .done(let count):
                self.buffer.append(contentsOf: self.chunk[0..<count])
                return true
            case .wouldBlock: try self.wait(for: Int16(POLLIN))
            case .ended: return false
            case .failed(let message): throw Self.failure(message)
            }
        }
    }

    /// One line, its LF included, of at most `limit` bytes.
    mutating func line(limit: Int) throws(CurlTunnelHandshake.Failure) -> [UInt8] {
        var searched = 0
        while true {
            if let end = self.buffer[searched...].firstIndex(of: UInt8(ascii: "\n")) {
                guard end < limit else { break }
                let line = Array(self.buffer[...end])
                self.buffer.removeFirst(end + 1)
                return line
            }
            searched = self.buffer.count
            guard self.buffer.count < limit else { break }
            guard try self.fill() else { throw Self.failure("the upstream closed the connection before its answer") }
        }
        throw Self.failure("the upstream's answer head is over 64 KiB")
    }

    mutating func bytes(count: Int) throws(CurlTunnelHandshake.Failure) -> [UInt8] {
        while self.buffer.count < count {
            guard try self.fill() else { throw Self.failure("the upstream's answer ended early") }
        }
        let bytes = Array(self.buffer[0..<count])
        self.buffer.removeFirst(count)
        return bytes
    }

    mutating func untilEnd(limit: Int) throws(CurlTunnelHandshake.Failure) -> [UInt8] {
        while try self.fill() {
            guard self.buffer.count <= limit else { throw Self.failure("the upstream's answer is over 1 MiB") }
        }
        return self.takeBuffered()
    }

    /// A chunked body decoded (RFC 9112 §7.1), its trailers dropped.
    mutating func chunkedBody(limit: Int) throws(CurlTunnelHandshake.Failure) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let sizeLine = try self.line(limit: 4096)
            let digits = sizeLine.prefix { Hex.value(of: $0) != nil }
            guard !digits.isEmpty, digits.count <= 8 else { throw Self.failure("the upstream's chunk size is invalid") }
            let size = digits.reduce(0) { $0 * 16 + Int(Hex.value(of: $1) ?? 0) }
            if size == 0 {
                while try self.line(limit: 4096).count > 2 {}
                return body
            }
            guard body.count + size <= limit else { throw Self.failure("the upstream's answer is over 1 MiB") }
            body += try self.bytes(count: size)
            _ = try self.line(limit: 2)
        }
    }

    mutating func takeBuffered() -> [UInt8] {
        defer { self.buffer = [] }
        return self.buffer
    }

    private func wait(for events: Int16) throws(CurlTunnelHandshake.Failure) {
        let left = self.deadline - .now
        guard left > .zero else { throw CurlTunnelHandshake.Failure(timedOut: true, message: "no answer in time") }
        var descriptor = pollfd(fd: self.tunnel.socket, events: events, revents: 0)
        let milliseconds = Int32(min(left.milliseconds + 1, Int64(Int32.max)))
        _ = poll(&descriptor, 1, milliseconds)
    }

    private static func failure(_ message: String) -> CurlTunnelHandshake.Failure {
        CurlTunnelHandshake.Failure(timedOut: false, message: message)
    }
}
