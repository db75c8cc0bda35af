import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking client socket for tests: sends raw bytes and reads raw responses, so tests
/// can send what no HTTP library would.
final class TestClient {
    /// A parsed response as the test saw it on the wire.
    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]

        func header(_ name: String) -> String? {
            self.headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        var bodyText: String { String(decoding: self.body, as: UTF8.self) }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let descriptor: Int32
    private var buffer: [UInt8] = []
    private(set) var sawEOF = false

    /// Connects to `127.0.0.1:port`; reads time out after `timeout` seconds so a broken
    /// server fails the test instead of hanging it.
    init(port: UInt16, timeout: Int = 5) throws {
        self.descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(self.descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else { throw Failure(description: "connect: errno \(errno)") }
        Self.setTimeout(self.descriptor, seconds: timeout)
    }

    /// Connects to `[::1]:port`.
    init(ipv6LoopbackPort port: UInt16, timeout: Int = 5) throws {
        self.descriptor = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        address.sin6_addr = in6addr_loopback
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(self.descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
        guard result == 0 else { throw Failure(description: "connect([::1]:\(port)): errno \(errno)") }
        Self.setTimeout(self.descriptor, seconds: timeout)
    }

    /// Connects to a unix socket at `path`.
    init(unixPath path: String, timeout: Int = 5) throws {
        self.descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(self.descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else { throw Failure(description: "connect(\(path)): errno \(errno)") }
        Self.setTimeout(self.descriptor, seconds: timeout)
    }

    private static func setTimeout(_ descriptor: Int32, seconds: Int) {
        var value = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        if !self.isClosed {
            close(self.descriptor)
        }
    }

    /// Sends `GET target` for `localhost` on this connection and reads the response.
    func get(_ target: String) throws -> Response {
        try self.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try self.readResponse()
    }

    /// Sends every byte of `text` (UTF-8).
    func send(_ text: String) throws {
        try self.send(Array(text.utf8))
    }

    /// Sends every byte.
    func send(_ bytes: [UInt8]) throws {
        guard LoopbackSocket.sendAll(self.descriptor, bytes) else {
            throw Failure(description: "send: errno \(errno)")
        }
    }

    /// Reads more bytes into the buffer; false at EOF or on a reset.
    private func fill(atMost limit: Int = 65536) throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: limit)
        let count = chunk.withUnsafeMutableBytes { recv(self.descriptor, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            self.buffer.append(contentsOf: chunk[0..<count])
            return true
        }
        if count == 0 || errno == ECONNRESET {
            self.sawEOF = true
            return false
        }
        throw Failure(description: "recv timed out or failed: errno \(errno); have \(self.buffer.count) bytes")
    }

    private func readLine() throws -> String? {
        while true {
            if let index = self.buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = self.buffer[..<index]
                self.buffer.removeFirst(index + 1)
                return String(decoding: line.last == UInt8(ascii: "\r") ? line.dropLast() : line, as: UTF8.self)
            }
            guard try self.fill() else { return nil }
        }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        while self.buffer.count < count {
            guard try self.fill() else { throw Failure(description: "EOF inside a body") }
        }
        defer { self.buffer.removeFirst(count) }
        return Array(self.buffer[..<count])
    }

    /// Reads one response (interim 1xx responses included, as their own responses).
    /// `headRequest` means the response has no body whatever its headers say.
    func readResponse(headRequest: Bool = false) throws -> Response {
        guard let statusLine = try self.readLine() else { throw Failure(description: "EOF before a response") }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw Failure(description: "bad status line: \(statusLine)")
        }
        var headers: [(String, String)] = []
        while let line = try self.readLine(), !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw Failure(description: "bad header: \(line)") }
            headers.append(
                (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            )
        }
        var response = Response(status: status, headers: headers, body: [])
        if headRequest || (100..<200).contains(status) || status == 204 || status == 304 {
            return response
        }
        if let length = response.header("Content-Length").flatMap(Int.init) {
            response.body = try self.readExactly(length)
        } else if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            while true {
                guard let sizeLine = try self.readLine(), let size = Int(sizeLine, radix: 16) else {
                    throw Failure(description: "bad chunk size")
                }
                if size == 0 {
                    while let trailer = try self.readLine(), !trailer.isEmpty {}
                    break
                }
                response.body += try self.readExactly(size)
                _ = try self.readExactly(2)
            }
        } else {
            while try self.fill() {}
            response.body = self.buffer
            self.buffer = []
        }
        return response
    }

    /// Reads a response head only; the body stays on the wire for ``streamBody(of:_:)``.
    func readHead() throws -> Response {
        guard let statusLine = try self.readLine() else { throw Failure(description: "EOF before a response") }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { throw Failure(description: "bad status line") }
        var headers: [(String, String)] = []
        while let line = try self.readLine(), !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw Failure(description: "bad header: \(line)") }
            headers.append(
                (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            )
        }
        return Response(status: status, headers: headers, body: [])
    }

    /// Streams the body of `head` to `consume` without keeping it; returns whether the body
    /// was complete (false when the connection ended early).
    @discardableResult
    func streamBody(of head: Response, _ consume: ([UInt8]) -> Void) throws -> Bool {
        if let length = head.header("Content-Length").flatMap(Int.init) {
            var remaining = length
            while remaining > 0 {
                if self.buffer.isEmpty {
                    guard try self.fill() else { return false }
                }
                let take = min(remaining, self.buffer.count)
                consume(Array(self.buffer[..<take]))
                self.buffer.removeFirst(take)
                remaining -= take
            }
            return true
        }
        guard head.header("Transfer-Encoding")?.lowercased() == "chunked" else {
            throw Failure(description: "no framing")
        }
        while true {
            guard let sizeLine = try self.readLine(), let size = Int(sizeLine, radix: 16) else { return false }
            if size == 0 {
                while let trailer = try self.readLine(), !trailer.isEmpty {}
                return true
            }
            var remaining = size
            while remaining > 0 {
                if self.buffer.isEmpty {
                    guard try self.fill() else { return false }
                }
                let take = min(remaining, self.buffer.count)
                consume(Array(self.buffer[..<take]))
                self.buffer.removeFirst(take)
                remaining -= take
            }
            guard (try? self.readExactly(2)) != nil else { return false }
        }
    }

    /// Reads once (at most `limit` bytes) and throws the bytes away: how many there were, 0
    /// at EOF or on a reset.
    func discardSome(atMost limit: Int = 65536) throws -> Int {
        if self.buffer.isEmpty {
            guard try self.fill(atMost: limit) else { return 0 }
        }
        defer { self.buffer.removeAll() }
        return self.buffer.count
    }

    /// Every byte until the server closes (buffered ones first).
    func readUntilEOF() throws -> [UInt8] {
        while try self.fill() {}
        defer { self.buffer.removeAll() }
        return self.buffer
    }

    /// Closes the sending side only: the server reads EOF and can still answer.
    func shutdownWrite() {
        shutdown(self.descriptor, Int32(SHUT_WR))
    }

    /// Closes the socket now (a client going away mid-exchange): unread data makes the
    /// kernel reset the connection, as when a real client process exits.
    func closeNow() {
        guard !self.isClosed else { return }
        self.isClosed = true
        close(self.descriptor)
    }

    private var isClosed = false

    /// Whether the server closed the connection: reads until EOF, failing if data arrives.
    func isClosedByServer() throws -> Bool {
        if self.sawEOF { return self.buffer.isEmpty }
        return try !self.fill() && self.buffer.isEmpty
    }
}
