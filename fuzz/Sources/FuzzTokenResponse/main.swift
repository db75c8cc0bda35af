@testable import TokenProxyCredentials

/// Parses the input as a token endpoint's answer (the first two bytes choose the HTTP
/// status, and the lowest bit of the first whether it is a JSON or a form answer) and checks that a token it accepts is one the proxy can use: not empty, and a
/// lifetime, when given, that is finite and positive.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTokenResponse(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard bytes.count >= 2 else { return 0 }
    let status = 100 + (Int(bytes[0]) << 8 | Int(bytes[1])) % 500
    let contentType = bytes[0] & 1 == 1 ? "application/x-www-form-urlencoded" : "application/json"
    switch TokenResponseParser.parse(status: status, body: Array(bytes.dropFirst(2)), contentType: contentType) {
    case .success(let response):
        precondition((200..<300).contains(status), "a token accepted from a \(status) answer")
        precondition(!response.accessToken.isEmpty, "an empty token accepted")
        if let lifetime = response.expiresIn {
            precondition(lifetime.isFinite && lifetime > 0, "lifetime \(lifetime) accepted")
        }
    case .failure(let error):
        _ = error.description
    }
    return 0
}
