/// Splitting and normalizing `host[:port]` values for comparison.
enum HostName {
    /// The lowercased host without brackets or a trailing dot, and the port if any.
    static func normalize(_ value: String) -> (host: String, port: String?) {
        var value = value
        return value.withUTF8 { bytes -> (host: String, port: String?) in
            let (hostRange, portRange) = Self.split(bytes)
            let hostBytes = UnsafeBufferPointer(rebasing: bytes[hostRange])
            let host = String(decoding: hostBytes, as: UTF8.self)
            let hasUpper = hostBytes.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
            return (
                hasUpper ? host.lowercased() : host,
                portRange.map { String(decoding: UnsafeBufferPointer(rebasing: bytes[$0]), as: UTF8.self) }
            )
        }
    }

    /// Where the host (without brackets or a trailing dot) and the port, if any, lie in the
    /// bytes of `host[:port]`. Nothing is copied: this runs for every request's Host.
    static func split(_ bytes: UnsafeBufferPointer<UInt8>) -> (host: Range<Int>, port: Range<Int>?) {
        var start = 0
        var end = bytes.count
        var port: Range<Int>?
        let colon = UInt8(ascii: ":")
        if bytes.first == UInt8(ascii: "[") {
            if let close = bytes.firstIndex(of: UInt8(ascii: "]")) {
                if close + 1 < bytes.count, bytes[close + 1] == colon {
                    port = (close + 2)..<bytes.count
                }
                start = 1
                end = close
            }
        } else if let last = bytes.lastIndex(of: colon), bytes.firstIndex(of: colon) == last {
            port = (last + 1)..<bytes.count
            end = last
        }
        if end > start, bytes[end - 1] == UInt8(ascii: ".") {
            end -= 1
        }
        return (start..<end, port)
    }
}
