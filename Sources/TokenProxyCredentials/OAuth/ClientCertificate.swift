import Crypto
import Foundation
import TokenProxyConfiguration
import TokenProxySupport
import TokenProxyUpstream

/// A provider's TLS client certificate and its key (`client_cert`, `client_key`), as read now
/// (RFC 8705). Both are secrets read through the secret-file cache at each use, so a file
/// rotated on disk is presented from the next connection on, and the tokens bound to the old
/// certificate are renewed (``thumbprint``).
package struct ClientCertificate: Sendable, Equatable {
    /// The certificate (and any chain after it), PEM.
    package var certificatePEM: String
    /// Its private key, PEM.
    package var keyPEM: String

    /// The provider's certificate as its files hold it now; nil when it has no `client_cert`.
    /// The error names the secret that cannot be read, never its value.
    package static func current(of provider: ProviderConfiguration) throws(ConfigurationError) -> ClientCertificate? {
        guard let certificate = provider.clientCert else { return nil }
        let certificatePEM = try certificate.resolve()
        // Validation requires the key with the certificate; a missing one leaves the key to
        // the certificate's own file, as libcurl reads it.
        let keyPEM = try provider.clientKey?.resolve() ?? certificatePEM
        return ClientCertificate(certificatePEM: certificatePEM, keyPEM: keyPEM)
    }

    /// The certificate's SHA-256 thumbprint, `x5t#S256` (RFC 8705 §3.1): base64url of the
    /// SHA-256 of the DER of the first certificate in the PEM; nil when there is none.
    package var thumbprint: String? {
        Self.thumbprint(pem: self.certificatePEM)
    }

    /// `x5t#S256` of the first `CERTIFICATE` block of `pem`, or nil.
    static func thumbprint(pem: String) -> String? {
        let begin = "-----BEGIN CERTIFICATE-----"
        let end = "-----END CERTIFICATE-----"
        guard let start = pem.range(of: begin), let stop = pem.range(of: end, range: start.upperBound..<pem.endIndex)
        else { return nil }
        let body = pem[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
        guard let der = Data(base64Encoded: String(body)), !der.isEmpty else { return nil }
        return Base64URL.encode(Data(SHA256.hash(data: der)))
    }
}

extension ProviderConfiguration {
    /// The thumbprint of the client certificate the provider presents now: nil without
    /// `client_cert`, and also when it cannot be read (the token request then fails and says why).
    func clientCertificateThumbprint() -> String? {
        (try? ClientCertificate.current(of: self))?.thumbprint
    }
}

extension UpstreamFetcher.Request {
    /// Presents `certificate` in the TLS handshake of this request.
    mutating func present(_ certificate: ClientCertificate) {
        self.clientCertificatePEM = certificate.certificatePEM
        self.clientKeyPEM = certificate.keyPEM
    }
}
