import CHiredis
import Foundation

/// One answer of a Redis server (RESP2), copied out of hiredis's reply object.
enum RedisReply: Sendable, Equatable {
    /// A bulk string: any bytes.
    case bytes([UInt8])
    /// An integer.
    case integer(Int64)
    /// An array of answers (of `EVAL`, `HGETALL`).
    case array([RedisReply])
    /// No value (an absent key, a failed `SET NX`).
    case null
    /// A status line (`OK`).
    case status(String)
    /// An error line (`WRONGPASS ...`, `NOSCRIPT ...`).
    case error(String)

    /// The most elements an array answer may hold (the store's largest, a hash of grants,
    /// holds two per provider).
    static let elementLimit = 1 << 16

    /// Copies `reply` (not freed here). Arrays nest at most `depth` levels and hold at most
    /// ``elementLimit`` elements: an answer deeper or longer than any command here asks for
    /// becomes an error.
    init(copying reply: UnsafePointer<redisReply>, depth: Int = 4) {
        let value = reply.pointee
        let type = value.type
        func text() -> String {
            guard let start = value.str else { return "" }
            let count = min(value.len, 4096)
            return start.withMemoryRebound(to: UInt8.self, capacity: count) { pointer in
                String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
            }
        }
        switch type {
        case tp_redis_reply_string():
            guard let start = value.str else {
                self = .bytes([])
                return
            }
            self = start.withMemoryRebound(to: UInt8.self, capacity: value.len) { pointer in
                .bytes(Array(UnsafeBufferPointer(start: pointer, count: value.len)))
            }
        case tp_redis_reply_integer():
            self = .integer(value.integer)
        case tp_redis_reply_nil():
            self = .null
        case tp_redis_reply_status():
            self = .status(text())
        case tp_redis_reply_error():
            self = .error(text())
        case tp_redis_reply_array():
            guard depth > 0 else {
                self = .error("reply nested too deeply")
                return
            }
            guard value.elements <= Self.elementLimit else {
                self = .error("reply of more than \(Self.elementLimit) elements")
                return
            }
            var elements: [RedisReply] = []
            elements.reserveCapacity(value.elements)
            if let element = value.element {
                for index in 0..<value.elements {
                    guard let child = element[index] else {
                        elements.append(.null)
                        continue
                    }
                    elements.append(RedisReply(copying: child, depth: depth - 1))
                }
            }
            self = .array(elements)
        default:
            self = .error("reply of unknown type \(type)")
        }
    }

    /// The integer of an `.integer` answer.
    var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The bytes of a bulk string answer.
    var bytes: [UInt8]? {
        if case .bytes(let value) = self { return value }
        return nil
    }
}
