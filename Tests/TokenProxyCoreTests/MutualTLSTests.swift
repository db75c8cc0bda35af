import Foundation
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxyForwarding
@testable import TokenProxySupport
@testable import TokenProxyUpstream

/// RFC 8705 against a real nginx requiring client certificates: `tls_client_auth` at the
/// token endpoint, the provider's certificate presented to its routes' upstreams, discovery's
/// `mtls_endpoint_aliases`, and a certificate rotated on disk.
@Suite(.serialized)
struct MutualTLSTests {
    /// A `client_credentials` provider `svc` at the fixture's token endpoint with the
    /// fixture's certificate files, and `extra` members.
    private func provider(_ fixture: MutualTLSFixture, _ extra: String = #", "client_auth": "tls_client_auth""#)
        -> String
    {
        """
        {"grant": "client_credentials", "token_url": "\(fixture.tokenURL)", "client_id": "mtls-client",
         "ca_file": "\(fixture.nginx.caFile)", "client_cert": {"file": "\(fixture.certificateFile)"},
         "client_key": {"file": "\(fixture.keyFile)"}\(extra)}
        """
    }

    /// A route `/up` to the fixture's mutual-TLS upstream with provider `svc`, and `extra` members.
    private func route(_ fixture: MutualTLSFixture, _ extra: String = "") -> String {
        #"{"path_prefix": "/up", "upstream": "\#(fixture.upstreamURL)", "provider": "svc", "#
            + #""ca_file": "\#(fixture.nginx.caFile)"\#(extra)}"#
    }

    private func proxy(provider: String, route: String, store: any TokenStore = MemoryTokenStore()) throws -> TestProxy
    {
        let configuration = TestProxy.configuration(#"{"providers": {"svc": \#(provider)}, "routes": [\#(route)]}"#)
        return try TestProxy(
            configuration,
            forwarder: CurlForwarder(
                configuration: configuration,
                engine: ForwardingFixture.engine,
                store: store,
                logger: TestLogging.logger
            )
        )
    }

    private func get(_ proxy: TestProxy) throws -> TestClient.Response {
        let client = try proxy.client()
        try client.send("GET /up/x HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try client.readResponse()
    }

    /// What the proxy said and what nginx logged, for a response that was not the one expected.
    private func explain(_ response: TestClient.Response, _ fixture: MutualTLSFixture) -> Comment {
        let log = (try? String(contentsOfFile: fixture.nginx.file("error.log"), encoding: .utf8)) ?? ""
        return "\(response.header("X-Tokenproxy-Error") ?? "-"): \(response.bodyText); nginx: \(log)"
    }

    @Test func tlsClientAuthPresentsTheCertificateAndSendsTheClientIDWithoutASecret() throws {
        let fixture = try MutualTLSFixture()
        let proxy = try self.proxy(provider: self.provider(fixture), route: self.route(fixture))
        let response = try self.get(proxy)
        #expect(response.status == 200, self.explain(response, fixture))
        #expect(response.header("X-Seen-Authorization") == "Bearer bound-1")
        let seen = try #require(fixture.endpoint.requests.first)
        #expect(fixture.endpoint.requests.count == 1)
        #expect(seen.fingerprint == (try fixture.currentFingerprint()))
        #expect(seen.form["grant_type"] == "client_credentials")
        #expect(seen.form["client_id"] == "mtls-client")
        #expect(seen.form["client_secret"] == nil)
        #expect(seen.form["client_assertion"] == nil)
        #expect(seen.authorization == nil)
        // The route has no certificate of its own: the provider's goes to its upstream.
        #expect(response.header("X-Client-Fingerprint") == (try fixture.currentFingerprint()))
        #expect(response.bodyText.contains("tokenproxy-client"))
    }

    @Test func aProviderWithoutACertificateIsRefusedByTheEndpoint() throws {
        let fixture = try MutualTLSFixture()
        let provider = """
            {"grant": "client_credentials", "token_url": "\(fixture.tokenURL)", "client_id": "mtls-client",
             "client_secret": "not-a-certificate", "ca_file": "\(fixture.nginx.caFile)"}
            """
        let proxy = try self.proxy(provider: provider, route: self.route(fixture))
        let response = try self.get(proxy)
        #expect(response.status == 502)
        #expect(response.header("X-Tokenproxy-Error") == "token_unavailable")
        // nginx refused the handshake's missing certificate before the endpoint saw anything.
        #expect(fixture.endpoint.requests.isEmpty)
    }

    @Test func aClientSecretProviderWithACertificateStillPresentsIt() throws {
        let fixture = try MutualTLSFixture()
        let proxy = try self.proxy(
            provider: self.provider(fixture, #", "client_secret": "s3cret""#),
            route: self.route(fixture)
        )
        let response = try self.get(proxy)
        #expect(response.status == 200, self.explain(response, fixture))
        let seen = try #require(fixture.endpoint.requests.first)
        #expect(seen.authorization?.hasPrefix("Basic ") == true)
        #expect(seen.fingerprint == (try fixture.currentFingerprint()))
        #expect(response.header("X-Client-Fingerprint") == (try fixture.currentFingerprint()))
    }

    @Test func theRoutesOwnCertificateWins() throws {
        let fixture = try MutualTLSFixture()
        // The provider's files now hold another certificate than nginx's `client.pem`.
        try fixture.rotate()
        let routeCertificate = fixture.nginx.clientCertificate
        let proxy = try self.proxy(
            provider: self.provider(fixture),
            route: self.route(
                fixture,
                #", "client_cert": "\#(routeCertificate)", "client_key": {"file": "\#(fixture.nginx.clientKey)"}"#
            )
        )
        let response = try self.get(proxy)
        #expect(response.status == 200, self.explain(response, fixture))
        let routeFingerprint = try MutualTLSFixture.fingerprint(ofCertificateIn: routeCertificate)
        #expect(response.header("X-Client-Fingerprint") == routeFingerprint)
        #expect(routeFingerprint != (try fixture.currentFingerprint()))
        #expect(fixture.endpoint.requests.first?.fingerprint == (try fixture.currentFingerprint()))
    }

    @Test func aRotatedCertificateIsPresentedOnANewConnectionAndItsTokenRenewed() throws {
        let fixture = try MutualTLSFixture()
        let proxy = try self.proxy(provider: self.provider(fixture), route: self.route(fixture))
        let first = try self.get(proxy)
        let second = try self.get(proxy)
        let old = try fixture.currentFingerprint()
        #expect(first.status == 200 && second.status == 200)
        #expect(first.header("X-Client-Fingerprint") == old)
        // The pooled connection is reused while the certificate is unchanged, and so is the token.
        #expect(second.header("X-Connection") == first.header("X-Connection"))
        #expect(second.header("X-Seen-Authorization") == "Bearer bound-1")
        #expect(fixture.endpoint.requests.count == 1)

        try fixture.rotate()
        let new = try fixture.currentFingerprint()
        #expect(new != old)
        let third = try self.get(proxy)
        #expect(third.status == 200)
        #expect(third.header("X-Client-Fingerprint") == new)
        #expect(third.header("X-Connection") != first.header("X-Connection"))
        // The token bound to the old certificate was not used again: a new one was obtained
        // with the new certificate.
        #expect(third.header("X-Seen-Authorization") == "Bearer bound-2")
        #expect(fixture.endpoint.requests.map(\.fingerprint) == [old, new])
    }

    @Test func aStoredTokenIsUsedOnlyWithTheCertificateItWasIssuedFor() throws {
        let fixture = try MutualTLSFixture()
        let provider = self.provider(fixture)
        let configuration = TestProxy.configuration(#"{"providers": {"svc": \#(provider)}, "routes": []}"#)
        let svc = try #require(configuration.providers["svc"])
        let thumbprint = try #require(svc.clientCertificateThumbprint())
        for (stored, expected) in [(thumbprint, "Bearer stored-token"), ("another-certificate", "Bearer bound-1")] {
            let store = MemoryTokenStore()
            try store.update {
                $0.grants["svc"] = StoredGrant(
                    accessToken: "stored-token",
                    tokenType: "Bearer",
                    expiresAt: Date().addingTimeInterval(3600),
                    configFingerprint: svc.tokenFingerprint()
                )
                $0.grants["svc"]?.certificateThumbprint = stored
            }
            let proxy = try self.proxy(provider: provider, route: self.route(fixture), store: store)
            #expect(try self.get(proxy).header("X-Seen-Authorization") == expected)
            #expect(try store.read().grants["svc"]?.certificateThumbprint == thumbprint)
        }
        #expect(fixture.endpoint.requests.count == 1)
    }

    @Test func discoveryUsesTheMTLSAliasOfTheTokenEndpoint() throws {
        let fixture = try MutualTLSFixture()
        let origin = fixture.endpoint.origin
        // The plain token endpoint cannot be reached: only the alias gives a token.
        fixture.endpoint.discoveryDocument = """
            {"issuer": "\(origin)", "token_endpoint": "https://127.0.0.1:1/token",
             "mtls_endpoint_aliases": {"token_endpoint": "\(fixture.tokenURL)"}}
            """
        let provider = """
            {"grant": "client_credentials", "issuer": "\(origin)", "allow_insecure_endpoints": true,
             "client_id": "mtls-client", "client_auth": "self_signed_tls_client_auth",
             "ca_file": "\(fixture.nginx.caFile)", "client_cert": {"file": "\(fixture.certificateFile)"},
             "client_key": {"file": "\(fixture.keyFile)"}}
            """
        let proxy = try self.proxy(provider: provider, route: self.route(fixture))
        let response = try self.get(proxy)
        #expect(response.status == 200, self.explain(response, fixture))
        #expect(response.header("X-Seen-Authorization") == "Bearer bound-1")
        #expect(fixture.endpoint.requests.map(\.path) == ["/token"])
        #expect(fixture.endpoint.requests.first?.fingerprint == (try fixture.currentFingerprint()))
    }

    @Test func revocationAndDeviceAuthorizationPostsPresentTheCertificate() throws {
        let fixture = try MutualTLSFixture()
        let configuration = TestProxy.configuration(
            #"{"providers": {"svc": \#(self.provider(fixture))}, "routes": []}"#
        )
        let client = TokenEndpointClient(
            provider: try #require(configuration.providers["svc"]),
            fetcher: UpstreamFetcher(engine: ForwardingFixture.engine),
            limits: Limits()
        )
        let answer = Locked<Result<UpstreamResponse, ProxyError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        client.post([("token", "old-token")], to: fixture.tokenURL, timeout: 10) { result in
            answer.withLockedValue { $0 = result }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 15) == .success)
        let response = try #require(try answer.withLockedValue { $0 }?.get())
        #expect(response.status == 200)
        let seen = try #require(fixture.endpoint.requests.first)
        #expect(seen.fingerprint == (try fixture.currentFingerprint()))
        #expect(seen.form["client_id"] == "mtls-client")
        #expect(seen.form["token"] == "old-token")
    }

    @Test func theThumbprintIsTheBase64URLSHA256OfTheCertificatesDER() throws {
        let fixture = try MutualTLSFixture()
        let output = try CommandRunner.run(
            [
                "sh", "-c",
                "openssl x509 -in \"$1\" -outform DER | openssl dgst -sha256 -binary | base64 | tr '+/' '-_' | tr -d '=\\n'",
                "thumbprint", fixture.certificateFile,
            ],
            timeout: 60
        )
        let pem = try String(contentsOfFile: fixture.certificateFile, encoding: .utf8)
        #expect(ClientCertificate.thumbprint(pem: pem) == String(decoding: output.stdout, as: UTF8.self))
        #expect(ClientCertificate.thumbprint(pem: "no certificate") == nil)
    }

    @Test func aliasesReplaceTheDiscoveredEndpointsOnlyForAProviderWithACertificate() {
        let discovered = DiscoveredEndpoints(
            tokenEndpoint: "https://as.example/token",
            deviceAuthorizationEndpoint: "https://as.example/device",
            revocationEndpoint: "https://as.example/revoke",
            mtlsTokenEndpoint: "https://mtls.as.example/token",
            mtlsRevocationEndpoint: "https://mtls.as.example/revoke"
        )
        var provider = ProviderConfiguration(name: "p", grant: .deviceCode)
        let fetcher = UpstreamFetcher(engine: ForwardingFixture.engine)
        let plain = TokenEndpointClient(provider: provider, fetcher: fetcher, limits: Limits())
        #expect(plain.preferringMTLSAliases(discovered) == discovered)
        provider.clientCert = .file("/c.pem")
        provider.clientKey = .file("/k.pem")
        let aliased = TokenEndpointClient(provider: provider, fetcher: fetcher, limits: Limits())
            .preferringMTLSAliases(discovered)
        #expect(aliased.tokenEndpoint == "https://mtls.as.example/token")
        #expect(aliased.revocationEndpoint == "https://mtls.as.example/revoke")
        // No alias: the endpoint itself.
        #expect(aliased.deviceAuthorizationEndpoint == "https://as.example/device")
    }
}
