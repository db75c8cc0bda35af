/// The credential header a request gets, already formatted (`Authorization: Bearer …`).
package struct CredentialHeader: Sendable, Equatable {
    /// The header name.
    package var name: String
    /// The header value.
    package var value: String
    /// The `DPoP` proof that goes with a bound token (RFC 9449 §7.1), made for this request.
    package var proof: String?

    /// Creates a credential header.
    package init(name: String, value: String, proof: String? = nil) {
        self.name = name
        self.value = value
        self.proof = proof
    }
}
