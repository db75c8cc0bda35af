import Foundation

/// Parses HTTP/1.1 responses out of bytes a connection wrote, for tests that read them from
/// memory rather than from a socket (``EmbeddedConnection``).
enum WireResponse {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The first complete response in `bytes` and how many bytes it took; nil while it is
    /// incomplete. `untilClose` says the output has ended, which completes a body framed
    /// by the close. Interim 1xx responses are responses of their own.
    static func parse(
        _ bytes: [UInt8],
        headRequest: Bool = false,
        untilClose: Bool = false
    ) throws -> (TestClient.Response, Int)? {
        guard let headEnd = self.find([13, 10, 13, 10], in: bytes, from: 0) else { return nil }
        let lines = String(decoding: bytes[..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw Failure(description: "bad status line: \(lines[0])")
        }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { throw Failure(description: "bad header: \(line)") }
            let value = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
            headers.append((String(line[..<colon]), String(value)))
        }
        var response = TestClient.Response(status: status, headers: headers, body: [])
        let bodyStart = headEnd + 4
        if headRequest || (100..<200).contains(status) || status == 204 || status == 304 {
            return (response, bodyStart)
        }
        if let length = response.header("Content-Length").flatMap(Int.init) {
            guard bytes.count - bodyStart >= length else { return nil }
            response.body = Array(bytes[bodyStart..<bodyStart + length])
            return (response, bodyStart + length)
        }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            var offset = bodyStart
            while true {
                guard let lineEnd = self.find([13, 10], in: bytes, from: offset) else { return nil }
                let sizeText = String(decoding: bytes[offset..<lineEnd], as: UTF8.self)
                guard let size = Int(sizeText, radix: 16) else { throw Failure(description: "bad chunk size") }
                offset = lineEnd + 2
                if size == 0 {
                    guard let trailerEnd = self.find([13, 10], in: bytes, from: offset) else { return nil }
                    return (response, trailerEnd + 2)
                }
                guard bytes.count - offset >= size + 2 else { return nil }
                response.body += bytes[offset..<offset + size]
                offset += size + 2
            }
        }
        guard untilClose else { return nil }
        response.body = Array(bytes[bodyStart...])
        return (response, bytes.count)
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        return (start...(bytes.count - needle.count)).first { index in
            bytes[index..<index + needle.count].elementsEqual(needle)
        }
    }
}
