@testable import TokenProxyHTTP
@testable import TokenProxyUpstream

/// Checks the encoded head as a client would read it: CRLF line ends only, one empty line
/// at the very end, every field line a token name and a clean value, and at most one
/// framing field (RFC 9112 §6.3), so the client reads exactly the framing it was told.
private func checkEncoded(_ bytes: [UInt8]) {
    precondition(bytes.count >= 4 && bytes.suffix(4).elementsEqual("\r\n\r\n".utf8), "head does not end in CRLFCRLF")
    let body = bytes.dropLast(2)
    var lines: [ArraySlice<UInt8>] = []
    var start = body.startIndex
    var index = body.startIndex
    while index < body.endIndex {
        let byte = body[index]
        if byte == UInt8(ascii: "\r") {
            precondition(index + 1 < body.endIndex && body[index + 1] == UInt8(ascii: "\n"), "bare CR in the head")
            lines.append(body[start..<index])
            index += 2
            start = index
            continue
        }
        precondition(byte != UInt8(ascii: "\n"), "bare LF in the head")
        precondition(byte != 0, "NUL in the head")
        index += 1
    }
    precondition(start == body.endIndex, "unterminated line")
    precondition(lines.first?.starts(with: "HTTP/1.1 ".utf8) == true, "no status line")
    var framingFields = 0
    for line in lines.dropFirst() {
        precondition(!line.isEmpty, "empty line inside the head")
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            preconditionFailure("field line without colon")
        }
        precondition(HTTPGrammar.isToken(line[..<colon]), "field name is not a token")
        let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
        if name == "content-length" || name == "transfer-encoding" { framingFields += 1 }
    }
    precondition(framingFields <= 1, "both or repeated framing fields")
}

/// Splits the input into header lines as libcurl hands them over and checks that whatever
/// the upstream sends, the head relayed to the client is well-formed.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponseHead(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    var parser = UpstreamResponseParser()
    var lineStart = 0
    var index = 0
    while index <= bytes.count {
        let atEnd = index == bytes.count
        if atEnd || bytes[index] == UInt8(ascii: "\n") {
            let end = atEnd ? index : index + 1
            let result = parser.line(bytes: UnsafeRawBufferPointer(rebasing: bytes[lineStart..<end]))
            lineStart = end
            if result == .invalid { return 0 }
            if result == .complete {
                for requestIsHead in [false, true] {
                    // `head` hands the fields over: each reading gets its own copy.
                    var reading = parser
                    let head = reading.head(requestIsHead: requestIsHead, rewriteLocation: { _ in nil })
                    for version in [HTTPVersion.http1_1, .http1_0] {
                        var encoder = ResponseEncoder()
                        var keepAlive = true
                        checkEncoded(
                            encoder.encodeHead(
                                head,
                                requestVersion: version,
                                requestIsHead: requestIsHead,
                                keepAlive: &keepAlive
                            )
                        )
                    }
                }
                return 0
            }
        }
        index += 1
    }
    return 0
}
