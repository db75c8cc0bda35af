import Foundation

/// The endpoints an authorization server publishes about itself.
struct DiscoveredEndpoints: Sendable, Equatable {
    /// The issuer the document names (checked equal to the configured one).
    var issuer: String?
    /// Whether the server sends `iss` in authorization responses (RFC 9207 §3).
    var issParameterSupported = false
    var tokenEndpoint: String?
    var authorizationEndpoint: String?
    var deviceAuthorizationEndpoint: String?
    var revocationEndpoint: String?
    /// `mtls_endpoint_aliases.token_endpoint` (RFC 8705 §5): for a client presenting a certificate.
    var mtlsTokenEndpoint: String?
    /// `mtls_endpoint_aliases.device_authorization_endpoint` (RFC 8705 §5).
    var mtlsDeviceAuthorizationEndpoint: String?
    /// `mtls_endpoint_aliases.revocation_endpoint` (RFC 8705 §5).
    var mtlsRevocationEndpoint: String?
}
