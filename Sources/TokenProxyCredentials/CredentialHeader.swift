/// The credential header a request gets, already formatted (`Authorization: Bearer …`).
package struct CredentialHeader: Sendable, Equatable {
    /// The header name.
    package var name: String
    /// The header value.
    package var value: String

    /// Creates a credential header.
    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
