import Crypto
import Foundation
import Synchronization
import TokenProxyHTTP
import TokenProxyMetrics
import TokenProxySupport

/// What a DPoP-bound token is sent with (RFC 9449): the key it is bound to, and the nonces
/// the servers it goes to asked for. It travels with the ``AccessToken``, so whoever holds the
/// token can prove possession for each request it makes. A class, so that a token (bound or
/// not) stays cheap to copy: one reference, nil for a bearer token.
package final class DPoPBinding: Sendable {
    /// The key the token is bound to.
    package let key: DPoPKey
    /// The latest nonce from each origin.
    package let nonces: DPoPNonces
    /// The provider's name, for the metrics.
    let provider: String
    /// Where proofs and nonce retries are counted.
    let metrics: ProxyMetrics?

    /// Binds to `key`, with the provider's `nonces`.
    package init(key: DPoPKey, nonces: DPoPNonces, provider: String = "", metrics: ProxyMetrics? = nil) {
        self.key = key
        self.nonces = nonces
        self.provider = provider
        self.metrics = metrics
    }

    /// Reads an answer from `url` to a request with a proof: its `DPoP-Nonce` is kept for
    /// the next proof to that origin (RFC 9449 §9), and the result says whether it is a 401
    /// asking for that nonce, so that the request is sent again with it.
    package func asksForNonce(_ head: HTTPResponseHead, url: String) -> Bool {
        guard let nonce = head.headers.first("DPoP-Nonce"), self.nonces.record(nonce, from: url) else {
            return false
        }
        return head.status == 401 && DPoPChallenge.asksForNonce(head.headers.values("WWW-Authenticate"))
    }

    /// The request for `url` is sent again with the nonce its server asked for (`place`).
    package func nonceRetried(at place: ProxyMetrics.NonceRetryPlace) {
        self.metrics?.dpopNonceRetried(provider: self.provider, at: place)
    }

    /// A fresh proof (RFC 9449 §4.2) for `method` on `url`: `htu` is the URL without query and
    /// fragment, `jti` random, `iat` now, `ath` the hash of `accessToken` when the proof goes
    /// with one (§4.3), and `nonce` the latest the URL's origin gave.
    package func proof(method: String, url: String, accessToken: String?) -> Result<String, DPoPKey.Failure> {
        var claims = #"{"htm":"# + JSONText.quoted(method) + #","htu":"# + JSONText.quoted(DPoPURL.htu(url))
        claims += #","iat":\#(Int(Date().timeIntervalSince1970)),"jti":""# + SecureRandom.base64URL(16) + "\""
        if let accessToken {
            claims += #","ath":""# + Base64URL.encode(Data(SHA256.hash(data: Data(accessToken.utf8)))) + "\""
        }
        if let nonce = self.nonces.nonce(for: url) {
            claims += #","nonce":"# + JSONText.quoted(nonce)
        }
        claims += "}"
        do {
            let proof = try self.key.sign(claims: claims)
            self.metrics?.dpopProofMade(provider: self.provider)
            return .success(proof)
        } catch {
            return .failure(error)
        }
    }
}

/// The latest `DPoP-Nonce` each origin sent (RFC 9449 §8, §9), used in the next proof for it.
/// At most ``capacity`` origins are remembered; a new one beyond that replaces the oldest.
package final class DPoPNonces: Sendable {
    /// The most origins remembered (a provider's token endpoint and its routes' upstreams).
    static let capacity = 64
    /// The longest nonce kept; a longer one is ignored.
    static let maximumLength = 1024

    private struct Entry {
        var origin: String
        var nonce: String
    }

    /// The newest last.
    private let entries = Mutex<[Entry]>([])

    /// Creates an empty cache.
    package init() {}

    /// The nonce for `url`'s origin, if one was given.
    package func nonce(for url: String) -> String? {
        let origin = DPoPURL.origin(url)
        return self.entries.withLockedValue { entries in entries.last(where: { $0.origin == origin })?.nonce }
    }

    /// Keeps `nonce`, sent by `url`'s origin, when it is a valid nonce (`1*NQCHAR`, RFC 9449
    /// §8.1); returns whether it was kept.
    @discardableResult
    package func record(_ nonce: String, from url: String) -> Bool {
        guard Self.isValid(nonce) else { return false }
        let origin = DPoPURL.origin(url)
        self.entries.withLockedValue { entries in
            entries.removeAll { $0.origin == origin }
            if entries.count >= Self.capacity {
                entries.removeFirst()
            }
            entries.append(Entry(origin: origin, nonce: nonce))
        }
        return true
    }

    /// `1*NQCHAR` (%x21 / %x23-5B / %x5D-7E), at most ``maximumLength`` bytes.
    static func isValid(_ nonce: String) -> Bool {
        let bytes = nonce.utf8
        return !bytes.isEmpty && bytes.count <= Self.maximumLength
            && bytes.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
    }
}

/// The parts of a URL a proof names.
enum DPoPURL {
    /// `url` without its query and fragment (RFC 9449 §4.2, `htu`), its scheme and host in
    /// lower case and a default port left out (RFC 3986 §6.2.2, §6.2.3, which §4.3 applies
    /// before comparing).
    static func htu(_ url: String) -> String {
        let end = url.utf8.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) ?? url.endIndex
        let origin = Self.origin(url)
        let path = url[Self.authorityEnd(url)..<end]
        return origin + path
    }

    /// `scheme://authority` of `url`, lowercased, without a default port: what a nonce
    /// belongs to.
    static func origin(_ url: String) -> String {
        var origin = String(url[..<Self.authorityEnd(url)]).lowercased()
        for (scheme, port) in [("https://", ":443"), ("http://", ":80")]
        where origin.hasPrefix(scheme) && origin.hasSuffix(port) {
            origin.removeLast(port.count)
        }
        return origin
    }

    /// Where `url`'s authority ends (its path, query or fragment begins); its start when it
    /// has no scheme (a `:` after the first `/`, `?` or `#` is not a scheme's).
    private static func authorityEnd(_ url: String) -> String.Index {
        let bytes = url.utf8
        guard let colon = bytes.firstIndex(where: { ":/?#".utf8.contains($0) }), bytes[colon] == UInt8(ascii: ":")
        else { return url.startIndex }
        var start = bytes.index(after: colon)
        if bytes[start...].starts(with: "//".utf8) {
            start = bytes.index(start, offsetBy: 2)
        }
        return bytes[start...].firstIndex(where: { "/?#".utf8.contains($0) }) ?? bytes.endIndex
    }
}

/// JSON string literals for the few values a proof's claims carry, escaped as the JSON log
/// lines are (``JSONLogLine/appendString(_:to:)``).
enum JSONText {
    /// `text` as a JSON string, quotes included (RFC 8259 §7).
    static func quoted(_ text: String) -> String {
        var bytes: [UInt8] = []
        JSONLogLine.appendString(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}
