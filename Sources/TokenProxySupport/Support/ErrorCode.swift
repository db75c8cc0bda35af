/// An error type whose stable codes are the cases of `Base`: ``ProxyError``,
/// ``LoginError`` and ``TokenStoreError``.
package protocol ErrorCodeFamily {
    /// The family's codes, each with its stable identifier as the raw value.
    associatedtype Base: RawRepresentable, Hashable, Sendable where Base.RawValue == String
}

/// A stable, machine-readable error code of one family. The cases live in the family's
/// `Base` enum; the codes are `static let` values in an extension of `ErrorCode` constrained
/// to the family, so a code is compared, hashed and printed the same way in every family,
/// and matching on codes outside the family never needs to be exhaustive.
package struct ErrorCode<Family: ErrorCodeFamily>: Sendable, Hashable, CustomStringConvertible {
    /// The case this code stands for.
    let base: Family.Base

    /// The code for `base`.
    package init(_ base: Family.Base) {
        self.base = base
    }

    /// The stable identifier (`token_unavailable`), as logs, error bodies and scripts see it.
    package var description: String { self.base.rawValue }
}
