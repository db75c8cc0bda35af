import Foundation
import Synchronization
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#endif

/// A plain HTTP server on loopback that misbehaves on purpose, for the proxy's liveness
/// (`docs/reference/security.md`, "A hostile or broken token endpoint"): what it does with each
/// connection is a ``Fault``
/// that can be switched while the proxy runs, so a test can break a token endpoint or an
/// upstream and then heal it. Each connection carries one request and is served on a thread
/// of its own; ``stop()`` (or deinit) shuts every socket down and waits for those threads.
final class FaultServer: Sendable {
    /// What the server does with one connection.
    enum Fault: Sendable {
        /// Reads the request and answers it whole with `Content-Length` and `Connection: close`.
        case answer(status: Int, headers: [(String, String)], body: String)
        /// Closes the connection as soon as it is accepted, before reading anything.
        case refuse
        /// Reads the request and sends nothing until the client closes.
        case hangBeforeHead
        /// Sends a response head announcing ``announcedLength`` bytes and a few of them, then
        /// nothing more.
        case headThenSilence
        /// Sends a head announcing ``announcedLength`` bytes, then body bytes at
        /// `bytesPerSecond`; with `stopAfter`, goes silent after that many.
        case slowDrip(bytesPerSecond: Int, stopAfter: Int? = nil)
        /// Sends a head and part of the body, then resets the connection (`SO_LINGER` 0).
        case resetMidBody
        /// Answers bytes that are not HTTP, then closes.
        case garbage
        /// `bad` on the first connection, `good` on the next, and so on alternately.
        indirect case flapping(good: Fault, bad: Fault)

        /// A token endpoint's success (RFC 6749 §5.1) carrying `token`.
        static func token(_ token: String, expiresIn: Int = 3600) -> Fault {
            .answer(
                status: 200,
                headers: [("Content-Type", "application/json")],
                body: #"{"access_token": "\#(token)", "token_type": "Bearer", "expires_in": \#(expiresIn)}"#
            )
        }

        /// A 200 with a short text body, as a healthy upstream answers.
        static let ok = Fault.answer(status: 200, headers: [("Content-Type", "text/plain")], body: "fine\n")
    }

    /// The body length the stalling faults announce and never complete.
    static let announcedLength = 65_536

    /// The loopback port it listens on.
    let port: UInt16
    private let core: FaultServerCore

    /// Listens on an ephemeral loopback port, serving connections with `fault`.
    init(_ fault: Fault) throws {
        let (listener, port) = try LoopbackSocket.listening(backlog: 1024)
        self.port = port
        let core = FaultServerCore(listener: listener, fault: fault)
        self.core = core
        Thread.detachNewThread { core.acceptLoop() }
    }

    /// The fault applied to connections accepted from now on.
    var fault: Fault {
        get { self.core.state.withLockedValue { $0.fault } }
        set { self.core.state.withLockedValue { $0.fault = newValue } }
    }

    /// The connections accepted so far.
    var connections: Int { self.core.state.withLockedValue { $0.accepted } }

    /// The requests read whole so far (a refused connection has none).
    var requests: Int { self.core.state.withLockedValue { $0.requests } }

    /// The serving threads still running, the accepting one included until ``stop()``.
    var threads: Int { self.core.state.withLockedValue { $0.threads } }

    /// `http://127.0.0.1:PORT` followed by `path`.
    func url(_ path: String = "/") -> String { "http://127.0.0.1:\(self.port)\(path)" }

    /// Stops accepting, shuts every open connection down and waits (within a bound) until
    /// every serving thread has closed its socket and ended.
    func stop() {
        guard self.core.stop() else { return }
        _ = eventually { self.threads == 0 }
    }

    deinit {
        self.stop()
    }
}

/// The serving threads' side of a ``FaultServer``: the threads hold this, not the server, so
/// the server's deinit can stop them.
private final class FaultServerCore: Sendable {
    struct State {
        var fault: FaultServer.Fault
        var accepted = 0
        var requests = 0
        var open: Set<Int32> = []
        /// Starts at 1 for the accepting thread.
        var threads = 1
        var stopped = false
    }

    let listener: Int32
    let state: Mutex<State>

    init(listener: Int32, fault: FaultServer.Fault) {
        self.listener = listener
        self.state = Mutex(State(fault: fault))
    }

    /// Marks the server stopped and shuts its sockets down; false when it already was.
    func stop() -> Bool {
        self.state.withLockedValue { state -> Bool in
            guard !state.stopped else { return false }
            state.stopped = true
            // Shut down, not closed: each thread closes its own socket, so a number is never
            // closed twice, or after another part of the process reused it.
            for descriptor in state.open { shutdown(descriptor, Int32(SHUT_RDWR)) }
            shutdown(self.listener, Int32(SHUT_RDWR))
            return true
        }
    }

    /// Accepts connections until ``stop()``, each served on a thread of its own.
    func acceptLoop() {
        defer {
            close(self.listener)
            self.state.withLockedValue { $0.threads -= 1 }
        }
        while true {
            let client = accept(self.listener, nil, nil)
            let (fault, stopped) = self.state.withLockedValue { state -> (FaultServer.Fault?, Bool) in
                guard client >= 0, !state.stopped else { return (nil, state.stopped) }
                // Registered before its thread starts, so that stop() reaches it either way.
                state.accepted += 1
                state.open.insert(client)
                state.threads += 1
                return (Self.resolve(state.fault, connection: state.accepted), false)
            }
            guard let fault else {
                if client >= 0 { close(client) }
                if stopped { return }
                continue
            }
            Thread.detachNewThread { self.serve(client, fault) }
        }
    }

    /// The fault for connection number `connection` (from 1).
    private static func resolve(_ fault: FaultServer.Fault, connection: Int) -> FaultServer.Fault {
        guard case .flapping(let good, let bad) = fault else { return fault }
        return Self.resolve(connection % 2 == 1 ? bad : good, connection: connection)
    }

    private func serve(_ client: Int32, _ fault: FaultServer.Fault) {
        defer {
            self.state.withLockedValue {
                $0.open.remove(client)
                $0.threads -= 1
            }
            close(client)
        }
        if case .refuse = fault { return }
        guard Self.readRequest(client) else { return }
        self.state.withLockedValue { $0.requests += 1 }
        let length = FaultServer.announcedLength
        switch fault {
        case .answer(let status, let headers, let body):
            var head = ["HTTP/1.1 \(status) Fault Server", "Content-Length: \(body.utf8.count)", "Connection: close"]
            head += headers.map { "\($0.0): \($0.1)" }
            guard Self.send(client, Array((head.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8)) else { return }
            Self.finishSending(client)
        case .hangBeforeHead:
            _ = Self.waitForClose(client, seconds: nil)
        case .headThenSilence:
            guard Self.send(client, Self.head(length) + Self.filler(16)) else { return }
            _ = Self.waitForClose(client, seconds: nil)
        case .slowDrip(let rate, let stopAfter):
            guard Self.send(client, Self.head(length)) else { return }
            let interval = 1 / Double(max(1, rate))
            for _ in 0..<min(length, stopAfter ?? length) {
                guard !Self.waitForClose(client, seconds: interval), Self.send(client, Self.filler(1)) else { return }
            }
            _ = Self.waitForClose(client, seconds: nil)
        case .resetMidBody:
            guard Self.send(client, Self.head(length) + Self.filler(1024)) else { return }
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        case .garbage:
            guard Self.send(client, Array("\u{1}\u{2}SSH-2.0-not-http \u{7f}\r\n\r\n\u{0}garbage".utf8)) else { return }
            Self.finishSending(client)
        case .refuse, .flapping:
            return
        }
    }

    /// A JSON response head announcing `length` body bytes, kept alive.
    private static func head(_ length: Int) -> [UInt8] {
        Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(length)\r\n\r\n".utf8)
    }

    /// `count` spaces: body bytes that are valid JSON whitespace, so only their end is missing.
    private static func filler(_ count: Int) -> [UInt8] {
        [UInt8](repeating: UInt8(ascii: " "), count: count)
    }

    /// Reads a request head and the body its `Content-Length` announces; false when the
    /// client closed first or sent more than a test ever does.
    private static func readRequest(_ client: Int32) -> Bool {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let end = Array("\r\n\r\n".utf8)
        while bytes.firstRange(of: end) == nil {
            let count = read(client, &chunk, chunk.count)
            guard count > 0, bytes.count < 1 << 20 else { return false }
            bytes += chunk[..<count]
        }
        guard let headEnd = bytes.firstRange(of: end)?.upperBound else { return false }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self).lowercased()
        let length =
            head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        var body = bytes.count - headEnd
        while body < min(length, 1 << 20) {
            let count = read(client, &chunk, chunk.count)
            guard count > 0 else { return false }
            body += count
        }
        return true
    }

    /// Sends every byte; false when the connection broke.
    private static func send(_ client: Int32, _ bytes: [UInt8]) -> Bool {
        LoopbackSocket.sendAll(client, bytes)
    }

    /// Ends the sending side and lets the client read all before the socket closes (unread
    /// input at close would reset the connection and could lose the answer).
    private static func finishSending(_ client: Int32) {
        shutdown(client, Int32(SHUT_WR))
        _ = Self.waitForClose(client, seconds: 2)
    }

    /// Waits until the client closes (or the server stops), discarding what it sends: true
    /// then, false when `seconds` passed first.
    private static func waitForClose(_ client: Int32, seconds: Double?) -> Bool {
        let end = seconds.map { ContinuousClock.now + .milliseconds(Int64($0 * 1000)) }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            var timeout: Int32 = -1
            if let end {
                let left = end - ContinuousClock.now
                guard left > .zero else { return false }
                let (seconds, attoseconds) = left.components
                timeout = Int32(clamping: max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
            }
            var descriptor = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, timeout)
            if ready == 0 || (ready < 0 && errno == EINTR) { continue }
            guard ready > 0 else { return true }
            if read(client, &chunk, chunk.count) <= 0 { return true }
        }
    }
}
