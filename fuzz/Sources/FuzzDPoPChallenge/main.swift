@testable import TokenProxyCredentials

/// Reads the input as what an upstream's 401 says to a request with a DPoP proof: up to the
/// first NUL a `WWW-Authenticate` value, after it a `DPoP-Nonce` (RFC 9449 §9). Checks that
/// neither crashes, that a nonce is kept only when it is valid (1 to 1,024 NQCHARs) and then
/// comes back unchanged for its origin, and that a proof made with it still verifies its
/// own structure (three dot-separated base64url parts).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDPoPChallenge(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let split = bytes.firstIndex(of: 0) ?? bytes.endIndex
    let challenge = String(decoding: bytes[..<split], as: UTF8.self)
    let nonce = split < bytes.endIndex ? String(decoding: bytes[(split + 1)...], as: UTF8.self) : ""
    _ = DPoPChallenge.asksForNonce([challenge, challenge])
    let nonces = DPoPNonces()
    let kept = nonces.record(nonce, from: "https://api.example/v1")
    let valid =
        !nonce.utf8.isEmpty && nonce.utf8.count <= 1024
        && nonce.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
    precondition(kept == valid, "nonce kept: \(kept), valid: \(valid)")
    precondition(nonces.nonce(for: "https://API.example:443/other") == (valid ? nonce : nil), "nonce not returned")
    if valid, let key = ProofKey.key {
        let binding = DPoPBinding(key: key, nonces: nonces)
        guard case .success(let proof) = binding.proof(method: challenge, url: challenge, accessToken: nonce) else {
            preconditionFailure("no proof")
        }
        precondition(proof.split(separator: ".", omittingEmptySubsequences: false).count == 3, "not a JWS")
    }
    return 0
}

/// One key for every input: made once, when first used.
private enum ProofKey {
    static let key = try? DPoPKey.generate(.es256)
}
