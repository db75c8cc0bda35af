import TokenProxyHTTP
import TokenProxySupport

/// A provider whose credential depends on the request it goes with (OAuth 1.0a signs the
/// method, URL and form parameters of each request): the forwarder asks it for the header
/// instead of formatting a token. Class-bound: the registry keeps it as an optional
/// reference, which every request copies and checks.
package protocol RequestAuthorizer: AnyObject, Sendable {
    /// The credential header for `method` on the upstream `url`, with `formBody` the
    /// `application/x-www-form-urlencoded` body when the request has one (nil otherwise).
    /// Called for every attempt, so a replay gets a fresh header.
    func authorization(method: String, url: String, formBody: [UInt8]?) -> Result<CredentialHeader, ProxyError>

    /// The error the client gets instead of the upstream's 401 `head` when it says the
    /// credential itself is refused, so that neither a replay nor the answer helps; nil to
    /// handle the 401 as any other.
    func refusal(of head: HTTPResponseHead) -> ProxyError?
}

extension RequestAuthorizer {
    /// By default a 401 is handled as any other.
    func refusal(of head: HTTPResponseHead) -> ProxyError? { nil }
}
