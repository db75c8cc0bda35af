import TokenProxyConfiguration
import TokenProxySupport
import TokenProxyUpstream

extension TokenEndpointClient {
    /// `request` presenting the provider's client certificate, when it has one (RFC 8705:
    /// `tls_client_auth` and `self_signed_tls_client_auth` authenticate by it; with another
    /// `client_auth` it binds the tokens to it). The files are read now, so a rotated
    /// certificate is presented from this request on.
    func presentingClientCertificate(
        _ request: UpstreamFetcher.Request
    ) -> Result<UpstreamFetcher.Request, ProxyError> {
        do {
            guard let certificate = try ClientCertificate.current(of: self.provider) else { return .success(request) }
            var request = request
            request.present(certificate)
            return .success(request)
        } catch {
            return .failure(
                ProxyError(
                    .tokenUnavailable,
                    "the client_cert or client_key cannot be read: \(error)",
                    provider: self.provider.name
                )
            )
        }
    }

    /// `discovered` with the `mtls_endpoint_aliases` in place of the endpoints they alias when
    /// the provider presents a client certificate (RFC 8705 §5); else unchanged.
    func preferringMTLSAliases(_ discovered: DiscoveredEndpoints) -> DiscoveredEndpoints {
        guard self.provider.clientCert != nil else { return discovered }
        var endpoints = discovered
        endpoints.tokenEndpoint = discovered.mtlsTokenEndpoint ?? discovered.tokenEndpoint
        endpoints.deviceAuthorizationEndpoint =
            discovered.mtlsDeviceAuthorizationEndpoint ?? discovered.deviceAuthorizationEndpoint
        endpoints.revocationEndpoint = discovered.mtlsRevocationEndpoint ?? discovered.revocationEndpoint
        return endpoints
    }
}
