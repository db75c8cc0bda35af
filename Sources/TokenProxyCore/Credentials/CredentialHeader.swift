/// The credential header a request gets, already formatted (`Authorization: Bearer …`).
public struct CredentialHeader: Sendable, Equatable {
    /// The header name.
    public var name: String
    /// The header value.
    public var value: String

    /// Creates a credential header.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
