import TokenProxyHTTP
import TokenProxySupport

/// One thing the parser reported, with consecutive body ranges merged into one, so that the
/// same request stream gives the same events however it was split.
private enum Event: Equatable {
    case head(HTTPRequestHead)
    case body([UInt8])
    case end
    case failed(ProxyError.Code)
}

/// Small limits, so that inputs of libFuzzer's default length reach every limit.
private let limits = HTTPParserLimits(
    maxRequestLineBytes: 256,
    maxHeaderBytes: 512,
    maxHeaderCount: 8,
    maxChunkExtensionBytes: 64
)

/// Feeds `input` to a parser the way a connection does: `step` bytes arrive at a time, the
/// unconsumed rest is kept and passed again with the next arrival.
private func events(of input: [UInt8], step: Int) -> [Event] {
    var parser = HTTPRequestParser(limits: limits)
    var pending: [UInt8] = []
    var events: [Event] = []
    var offset = 0
    func record(_ event: Event) {
        if case .body(let more) = event, case .body(let earlier)? = events.last {
            events[events.count - 1] = .body(earlier + more)
        } else {
            events.append(event)
        }
    }
    while offset < input.count {
        let arriving = input[offset..<min(offset + step, input.count)]
        offset += arriving.count
        pending.append(contentsOf: arriving)
        feeding: while true {
            let (outcome, consumed) = pending.withUnsafeBufferPointer { parser.next($0) }
            precondition(consumed >= 0 && consumed <= pending.count, "consumed \(consumed) of \(pending.count)")
            switch outcome {
            case .head(let head):
                record(.head(head))
            case .body(let range):
                precondition(range.lowerBound >= 0 && range.upperBound <= consumed, "body \(range) beyond \(consumed)")
                record(.body(Array(pending[range])))
            case .end:
                record(.end)
            case .needMoreData:
                pending.removeFirst(consumed)
                break feeding
            case .failed(let error):
                // A failed parser stays failed: the stream's framing is lost.
                let (again, _) = pending.withUnsafeBufferPointer { parser.next($0) }
                precondition(again == .failed(error), "a failed parser answered \(again)")
                record(.failed(error.code))
                return events
            }
            pending.removeFirst(consumed)
        }
    }
    return events
}

/// Checks that the parser never crashes, never reports bytes it was not given, stays failed
/// once failed, and reports the same requests whether the input arrives at once or in
/// pieces (the segmentation is taken from the first byte).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestParser(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let step = Int(bytes[0] % 17) + 1
    let input = Array(bytes.dropFirst())
    let whole = events(of: input, step: max(input.count, 1))
    let pieces = events(of: input, step: step)
    let bodyBytes = whole.reduce(0) { total, event in
        if case .body(let body) = event { return total + body.count }
        return total
    }
    precondition(bodyBytes <= input.count, "more body bytes than input bytes")
    precondition(whole == pieces, "segmentation \(step) changed the outcome:\n\(whole)\n\(pieces)")
    return 0
}
