import Crypto
import Foundation

@testable import TokenProxyHTTP
@testable import TokenProxyServer
@testable import TokenProxySupport

/// An in-process authorization server and resource server that demand DPoP (RFC 9449):
/// `/token` issues tokens bound to the proof's key (`token_type` `DPoP`), `/resource/...`
/// accepts only `Authorization: DPoP` with a proof of that key for that request. Each checks
/// every proof with ``DPoPProofVerifier``, refuses a `jti` seen before, and, when told to,
/// demands the current nonce: 400 `use_dpop_nonce` at the token endpoint (§8), 401 with a
/// `WWW-Authenticate: DPoP` challenge at the resource (§9).
final class FakeDPoPServer: HTTPExchangeHandler, @unchecked Sendable {
    /// One request as the server judged it.
    struct Seen {
        var method: String
        var path: String
        var status: Int
        /// The proof as sent (nil when there was none).
        var proof: String?
        var authorization: String?
        var nonce: String?
        var thumbprint: String?
        var bodySHA256: String
        var problem: String?
    }

    private let lock = NSLock()
    private var seen: [Seen] = []
    private var jtis: Set<String> = []
    private var boundTokens: [String: String] = [:]
    private var issued = 0
    /// The nonce each side demands: the token endpoint's and the resource's differ, as
    /// they may at two servers of one origin.
    private var tokenNonce = "nonce-t1"
    private var resourceNonce = "nonce-r1"
    private var server: TestHTTPServer?
    private(set) var port: UInt16 = 0

    /// Whether the token endpoint demands the current nonce.
    var nonceAtToken = true
    /// Whether the resource demands the current nonce.
    var nonceAtResource = true
    /// The token endpoint answers `token_type` `Bearer` (a server that ignores proofs).
    var issuesBearer = false
    /// How long the token endpoint waits before answering.
    var tokenDelay: Double = 0

    init() throws {
        self.server = try TestHTTPServer(handler: self)
        self.port = self.server?.port ?? 0
    }

    var origin: String { "http://127.0.0.1:\(self.port)" }
    var tokenURL: String { self.origin + "/token" }
    var requests: [Seen] { self.lock.withLock { self.seen } }
    var tokenRequests: [Seen] { self.requests.filter { $0.path == "/token" } }
    var resourceRequests: [Seen] { self.requests.filter { $0.path != "/token" } }

    /// A new nonce at the resource: proofs with the old one are refused from now on.
    func rotateNonce() {
        self.lock.withLock { self.resourceNonce = "nonce-r\(UUID().uuidString.prefix(8))" }
    }

    func handle(_ exchange: HTTPExchange) {
        var body: [UInt8] = []
        exchange.readBody { [self] event in
            switch event {
            case .bytes(let bytes):
                body += bytes
            case .end:
                let response = self.judge(exchange.head, body: body)
                if exchange.head.path == "/token", self.tokenDelay > 0 {
                    let bound = QueueBound(exchange, context: exchange.context)
                    DispatchQueue.global().asyncAfter(deadline: .now() + self.tokenDelay) {
                        bound.execute { $0.respond(response) }
                    }
                } else {
                    exchange.respond(response)
                }
            }
        }
    }

    private func judge(_ head: HTTPRequestHead, body: [UInt8]) -> HTTPResponse {
        let path = String(head.path.split(separator: "?", maxSplits: 1).first ?? "")
        let isToken = path == "/token"
        let proofs = head.headers.values("DPoP")
        let authorization = head.headers.first("Authorization")
        let digest = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        var seen = Seen(
            method: head.method,
            path: path,
            status: 0,
            proof: proofs.first,
            authorization: authorization,
            bodySHA256: digest
        )
        let token: String? =
            isToken
            ? nil
            : authorization.flatMap { value in
                value.hasPrefix("DPoP ") ? String(value.dropFirst(5)) : nil
            }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        let (status, answer): (Int, String) = self.lock.withLock {
            let currentNonce = isToken ? self.tokenNonce : self.resourceNonce
            headers.add(name: "DPoP-Nonce", value: currentNonce)
            guard proofs.count == 1, let jws = proofs.first else {
                seen.problem = "\(proofs.count) DPoP headers"
                return (isToken ? 400 : 401, #"{"error": "invalid_dpop_proof"}"#)
            }
            if !isToken, token == nil {
                seen.problem = "not the DPoP scheme: \(authorization ?? "none")"
                return (401, #"{"error": "invalid_token"}"#)
            }
            let proof: DPoPProofVerifier.Proof
            do {
                proof = try DPoPProofVerifier.verify(
                    jws,
                    method: head.method,
                    url: self.origin + path,
                    accessToken: token
                )
            } catch {
                seen.problem = "\(error)"
                return (isToken ? 400 : 401, #"{"error": "invalid_dpop_proof"}"#)
            }
            seen.nonce = proof.nonce
            seen.thumbprint = proof.thumbprint
            guard self.jtis.insert(proof.jti).inserted else {
                seen.problem = "jti replayed"
                return (isToken ? 400 : 401, #"{"error": "invalid_dpop_proof"}"#)
            }
            let demands = isToken ? self.nonceAtToken : self.nonceAtResource
            if demands, proof.nonce != currentNonce {
                if !isToken {
                    headers.add(name: "WWW-Authenticate", value: #"DPoP error="use_dpop_nonce", algs="ES256 EdDSA""#)
                }
                return (isToken ? 400 : 401, #"{"error": "use_dpop_nonce", "error_description": "nonce"}"#)
            }
            if isToken {
                self.issued += 1
                let value = "dpop-token-\(self.issued)"
                self.boundTokens[value] = proof.thumbprint
                let type = self.issuesBearer ? "Bearer" : "DPoP"
                return (200, #"{"access_token": "\#(value)", "token_type": "\#(type)", "expires_in": 3600}"#)
            }
            guard let token, self.boundTokens[token] == proof.thumbprint else {
                seen.problem = "the token is not bound to the proof's key"
                headers.add(name: "WWW-Authenticate", value: #"DPoP error="invalid_token""#)
                return (401, #"{"error": "invalid_token"}"#)
            }
            return (200, #"{"ok": true, "method": "\#(head.method)", "body_sha256": "\#(digest)"}"#)
        }
        seen.status = status
        self.lock.withLock { self.seen.append(seen) }
        return HTTPResponse(status: status, headers: headers, body: Array(answer.utf8))
    }
}
