import Foundation
import Testing

@testable import TokenProxyConfiguration

/// The provider keys of RFC 8705: `client_auth` `tls_client_auth` and
/// `self_signed_tls_client_auth`, and `client_cert` with `client_key`.
struct MutualTLSConfigurationTests {
    private func document(_ provider: String) -> String {
        ConfigurationTestSupport.document(providers: #"{"p": {"# + provider + "}}")
    }

    private let clientCredentials =
        #""grant": "client_credentials", "token_url": "https://a.example/t", "client_id": "c""#
    private let files = #""client_cert": {"file": "/etc/tp/client.pem"}, "client_key": {"file": "/etc/tp/client.key"}"#

    @Test(arguments: ["tls_client_auth", "self_signed_tls_client_auth"])
    func aMutualTLSMethodNeedsTheCertificateAndItsKey(method: String) {
        let problems = ConfigurationTestSupport.problems(
            self.document(self.clientCredentials + #", "client_auth": "\#(method)""#)
        )
        #expect(
            problems.map(\.description).sorted() == [
                "providers.p.client_cert: required with client_auth '\(method)' "
                    + "(the PEM client certificate presented over TLS)",
                "providers.p.client_key: required with client_auth '\(method)' "
                    + "(the client certificate's PEM private key)",
            ]
        )
    }

    @Test(arguments: ["tls_client_auth", "self_signed_tls_client_auth"])
    func aMutualTLSMethodWithBothFilesIsValid(method: String) throws {
        let configuration = try ConfigurationTestSupport.decode(
            self.document(self.clientCredentials + #", "client_auth": "\#(method)", "# + self.files)
        )
        let provider = try #require(configuration.providers["p"])
        #expect(provider.clientAuth.rawValue == method)
        #expect(provider.clientAuth.isMutualTLS)
        #expect(provider.clientCert == .file("/etc/tp/client.pem"))
        #expect(provider.clientKey == .file("/etc/tp/client.key"))
        // Secrets like the others: listed with their paths, for the permission checks.
        #expect(configuration.secretFiles.map(\.path).contains("providers.p.client_cert"))
        #expect(configuration.secretFiles.map(\.path).contains("providers.p.client_key"))
    }

    @Test func theOtherMethodsAreUnchanged() {
        #expect(!ClientAuthMethod.clientSecretBasic.isMutualTLS)
        #expect(!ClientAuthMethod.none.isMutualTLS)
    }

    @Test func aMutualTLSMethodSendsNoSecret() {
        let problems = ConfigurationTestSupport.problems(
            self.document(
                self.clientCredentials + #", "client_auth": "tls_client_auth", "client_secret": "s", "# + self.files
            )
        )
        #expect(
            problems.map(\.description) == ["providers.p.client_secret: not used with client_auth 'tls_client_auth'"]
        )
    }

    @Test func aKeyWithoutACertificateIsRefused() {
        let problems = ConfigurationTestSupport.problems(
            self.document(#""grant": "static", "token": {"env": "T"}, "client_key": {"file": "/k.pem"}"#)
        )
        #expect(problems.map(\.description) == ["providers.p.client_key: needs client_cert"])
    }

    @Test func aCertificateWithoutAKeyIsRefused() {
        let problems = ConfigurationTestSupport.problems(
            self.document(#""grant": "static", "token": {"env": "T"}, "client_cert": {"file": "/c.pem"}"#)
        )
        #expect(
            problems.map(\.description) == [
                "providers.p.client_key: required with client_cert (the client certificate's PEM private key)"
            ]
        )
    }

    @Test func anyGrantMayPresentACertificate() throws {
        for provider in [
            #""grant": "static", "token": {"env": "T"}, "# + self.files,
            self.clientCredentials + #", "client_secret": {"env": "S"}, "# + self.files,
        ] {
            let problems = ConfigurationTestSupport.problems(self.document(provider))
            #expect(problems.isEmpty, "\(problems.map(\.description))")
        }
    }

    @Test func aLiteralThatIsNotPEMIsRefused() {
        let problems = ConfigurationTestSupport.problems(
            self.document(
                #""grant": "static", "token": {"env": "T"}, "client_cert": "/etc/tp/client.pem", "#
                    + #""client_key": "/etc/tp/client.key""#
            )
        )
        #expect(problems.map(\.path) == ["providers.p.client_cert", "providers.p.client_key"])
        #expect(problems.first?.message.contains(#"{"file": "/path/to/cert.pem"}"#) == true)
    }

    @Test func relativeFilesAreResolvedAgainstTheConfigurationsDirectory() throws {
        let json = self.document(
            #""grant": "static", "token": {"env": "T"}, "#
                + #""client_cert": {"file": "certs/client.pem"}, "client_key": {"file": "./certs/client.key"}"#
        )
        let configuration = try ProxyConfiguration.decode(
            Data(json.utf8),
            environment: ConfigurationTestSupport.environment,
            baseDirectory: "/etc/tp"
        )
        #expect(configuration.providers["p"]?.clientCert == .file("/etc/tp/certs/client.pem"))
        #expect(configuration.providers["p"]?.clientKey == .file("/etc/tp/certs/client.key"))
    }
}
