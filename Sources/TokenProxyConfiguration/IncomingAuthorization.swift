import Foundation

/// What a route does with an `Authorization` header sent by the client (`incoming_authorization`).
package enum IncomingAuthorization: String, Sendable, Equatable, CaseIterable {
    /// The client's header is dropped and the provider's credential injected (default).
    case replace
    /// A client's own `Authorization` passes untouched and nothing is injected.
    case keep
    /// A request carrying `Authorization` is refused with 400.
    case reject
}
