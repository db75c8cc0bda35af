import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxySupport
import TokenProxyUpstream

extension RouteConfiguration {
    /// libcurl's settings for this route's upstream under `limits`, for a forwarded request
    /// and a tunnel alike: plain HTTP only without a provider or when allowed, the route's
    /// trust anchors and client certificate, the timeouts. The `client_key` secret is read
    /// now (a rotated key takes effect at the next request); one that cannot be read fails
    /// the request with 502 `upstream_unreachable`. A route without its own `client_cert`
    /// presents its `provider`'s, when that has one (RFC 8705 §3: the provider's tokens are
    /// bound to it), read now as well. `fixed` is ``fixedConnection``, made once for the route,
    /// used when nothing is to be read.
    func upstreamOptions(
        limits: Limits,
        provider: ProviderConfiguration? = nil,
        fixed: CurlRequestSetup.Connection? = nil,
        idleTimeout: Double? = nil,
        resendable: Bool = true,
        freshConnection: Bool = false
    ) -> Result<CurlRequestSetup.Options, ProxyError> {
        // Read before the closure: one that used `self` would copy the whole route.
        let firstByteTimeout = self.timeoutSeconds ?? limits.upstreamFirstByteTimeoutSeconds
        return self.connection(provider: provider, fixed: fixed).map { connection in
            CurlRequestSetup.Options(
                connection: connection,
                connectTimeout: limits.upstreamConnectTimeoutSeconds,
                firstByteTimeout: firstByteTimeout,
                idleTimeout: idleTimeout,
                resendable: resendable,
                freshConnection: freshConnection
            )
        }
    }

    /// The connection settings for one request: `fixed` when nothing is to be read, else made
    /// with the secrets read now.
    private func connection(
        provider: ProviderConfiguration?,
        fixed: CurlRequestSetup.Connection?
    ) -> Result<CurlRequestSetup.Connection, ProxyError> {
        // Matched rather than compared with nil: `== nil` copied the provider's configuration.
        let hasProvider: Bool
        if case .some = provider { hasProvider = true } else { hasProvider = false }
        if let fixed, self.clientKey == nil, self.clientCert != nil || !hasProvider {
            return .success(fixed)
        }
        let clientKey: String?
        do {
            clientKey = try self.clientKey?.resolve()
        } catch {
            return .failure(
                ProxyError(.upstreamUnreachable, "the route's client_key cannot be read: \(error)", route: self.name)
            )
        }
        var providerCertificate: ClientCertificate?
        if self.clientCert == nil, let provider {
            do {
                providerCertificate = try ClientCertificate.current(of: provider)
            } catch {
                return .failure(
                    ProxyError(
                        .upstreamUnreachable,
                        "the provider's client_cert or client_key cannot be read: \(error)",
                        route: self.name,
                        provider: provider.name
                    )
                )
            }
        }
        return .success(
            self.makeConnection(
                clientKeyPEM: providerCertificate?.keyPEM ?? clientKey,
                clientCertificatePEM: providerCertificate?.certificatePEM
            )
        )
    }

    /// The connection settings of a route that reads no secret per request (no `client_key`),
    /// for ``upstreamOptions(limits:provider:fixed:idleTimeout:resendable:freshConnection:)``
    /// to share between its requests; nil for a route that does. A route that presents its
    /// provider's client certificate still has it read per request.
    var fixedConnection: CurlRequestSetup.Connection? {
        guard self.clientKey == nil else { return nil }
        return self.makeConnection(clientKeyPEM: nil, clientCertificatePEM: nil)
    }

    /// The route's settings with this key and certificate: plain HTTP only without a provider
    /// or when allowed, its trust anchors and its own certificate file.
    private func makeConnection(clientKeyPEM: String?, clientCertificatePEM: String?) -> CurlRequestSetup.Connection {
        CurlRequestSetup.Connection(
            allowPlainHTTP: self.allowInsecureUpstream || self.provider == nil,
            caFile: self.caFile,
            clientCertificate: self.clientCert,
            clientKeyPEM: clientKeyPEM,
            clientCertificatePEM: clientCertificatePEM
        )
    }
}
