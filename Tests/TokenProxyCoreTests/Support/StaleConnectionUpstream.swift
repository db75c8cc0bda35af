import Foundation
import Synchronization
import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#endif

/// An upstream on loopback whose connections break at chosen requests, the way a server's
/// kept-alive connections break when it closes them (`keepalive_requests`, an idle timeout)
/// as a client sends on them: such a request is read whole, then the connection is reset
/// (`SO_LINGER` 0) without an answer. Reading the body too means the client has sent all of
/// it, so libcurl cannot send the request again by itself without rewinding the body. Every
/// other request is answered 200 with keep-alive; the body tells which connection served
/// it and echoes the request body.
final class StaleConnectionUpstream: Sendable {
    /// A request as it arrived: the connection's number (from 1, in order of acceptance), the
    /// method, the target, its `Authorization` field, and whether it was answered or its
    /// connection reset.
    struct Seen: Equatable, Sendable {
        var connection: Int
        var method: String
        var target: String
        var authorization: String?
        var answered: Bool
    }

    /// What the serving threads record.
    private final class Record: Sendable {
        let state = Mutex<(accepted: Int, seen: [Seen])>((0, []))
    }

    let port: UInt16
    private let listener: Int32
    private let record = Record()

    /// Listens on an ephemeral loopback port. A request for which `reset` is true (given the
    /// connection's number and the request's number on it, both from 1) is read whole and its
    /// connection reset.
    init(reset: @escaping @Sendable (_ connection: Int, _ request: Int) -> Bool) throws {
        let (listener, port) = try LoopbackSocket.listening()
        self.listener = listener
        self.port = port
        let record = self.record
        Thread.detachNewThread {
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                let number = record.state.withLockedValue { state in
                    state.accepted += 1
                    return state.accepted
                }
                Thread.detachNewThread { Self.serve(client, connection: number, reset: reset, record: record) }
            }
        }
    }

    /// Every request seen so far, in order of arrival.
    var seen: [Seen] { self.record.state.withLockedValue { $0.seen } }

    private static func serve(
        _ client: Int32,
        connection: Int,
        reset: @Sendable (Int, Int) -> Bool,
        record: Record
    ) {
        var input: [UInt8] = []
        var request = 0
        while let head = Self.readHead(client, input: &input) {
            request += 1
            let line = head.split(separator: "\r\n", omittingEmptySubsequences: false).first ?? ""
            let parts = line.split(separator: " ")
            let method = parts.first.map(String.init) ?? ""
            let target = parts.count > 1 ? String(parts[1]) : ""
            var seen = Seen(
                connection: connection,
                method: method,
                target: target,
                authorization: Self.field("Authorization", in: head),
                answered: false
            )
            let length = Self.field("Content-Length", in: head).flatMap { Int($0) } ?? 0
            guard let body = Self.readBody(client, length: length, input: &input) else { break }
            if reset(connection, request) {
                record.state.withLockedValue { $0.seen.append(seen) }
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                close(client)
                return
            }
            seen.answered = true
            record.state.withLockedValue { $0.seen.append(seen) }
            let text = "\(method) \(target) on connection \(connection): " + String(decoding: body, as: UTF8.self)
            let answer = Array(
                "HTTP/1.1 200 OK\r\nContent-Length: \(text.utf8.count)\r\nContent-Type: text/plain\r\n\r\n\(text)".utf8
            )
            guard Self.sendAll(client, answer) else { break }
        }
        close(client)
    }

    /// The next request head (without its final empty line), consuming it from `input` and
    /// the socket; nil at the end of the connection.
    private static func readHead(_ client: Int32, input: inout [UInt8]) -> String? {
        let end = Array("\r\n\r\n".utf8)
        while true {
            if let range = input.firstRange(of: end) {
                let head = String(decoding: input[..<range.lowerBound], as: UTF8.self)
                input.removeSubrange(..<range.upperBound)
                return head
            }
            guard self.fill(client, &input) else { return nil }
        }
    }

    /// `length` body bytes, consumed from `input` and the socket; nil if the connection ended
    /// first.
    private static func readBody(_ client: Int32, length: Int, input: inout [UInt8]) -> [UInt8]? {
        while input.count < length {
            guard self.fill(client, &input) else { return nil }
        }
        let body = Array(input[..<length])
        input.removeSubrange(..<length)
        return body
    }

    /// The value of the first field called `name` in `head`.
    private static func field(_ name: String, in head: String) -> String? {
        for line in head.split(separator: "\r\n").dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    private static func fill(_ client: Int32, _ input: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = read(client, &chunk, chunk.count)
        guard count > 0 else { return false }
        input += chunk[..<count]
        return true
    }

    private static func sendAll(_ client: Int32, _ bytes: [UInt8]) -> Bool {
        LoopbackSocket.sendAll(client, bytes)
    }

    deinit {
        shutdown(self.listener, Int32(SHUT_RDWR))
        close(self.listener)
    }
}
