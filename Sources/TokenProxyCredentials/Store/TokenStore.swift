import Foundation

/// Where tokens are kept between runs and shared between processes (`docs/reference/token-store.md`,
/// "Behaviour" 5 and 7).
///
/// Every change is a read-modify-write under the store's lock, so two processes sharing
/// one file never lose each other's writes. A refresh holds the provider's own lock across
/// the token request, so processes sharing a store refresh once and re-read rather than
/// race: a rotated refresh token is never spent twice.
package protocol TokenStore: Sendable {
    /// "memory", or the file's path: for messages.
    var location: String { get }

    /// The contents as they are now (an empty store when there is no file yet).
    func read() throws(TokenStoreError) -> TokenStoreContents

    /// Re-reads the contents under the store lock, lets `body` change them, and writes the
    /// result durably before returning (nothing is written when `body` changed nothing).
    func update<Result>(_ body: (inout TokenStoreContents) -> Result) throws(TokenStoreError) -> Result

    /// Takes the provider's refresh lock, waiting until `deadline` at most. Blocks the
    /// calling thread: never call it on a Dispatch queue that serves connections.
    func lockProvider(_ name: String, deadline: ContinuousClock.Instant) throws(TokenStoreError) -> any TokenStoreLock

    /// Something that changes whenever the contents may have changed (the file's identity,
    /// size and modification time; a counter in memory), cheap to ask for; nil when unknown.
    /// A running proxy compares it once a second to notice a `logout` or `login`.
    func revision() -> String?

    /// Why the store's server cannot be used now (a Redis store asks it), nil when it can or
    /// when the store has no server: `status` and `check` show it.
    func unavailability() -> String?
}

extension TokenStore {
    /// A store in memory or in a file has no server to ask.
    package func unavailability() -> String? { nil }
}
