import Foundation

/// The version string reported by `status` and `--version`.
package enum TokenProxyVersion {
    /// The current version.
    package static let current = "0.1.0"
}
