import Foundation

/// The version string reported by `status` and `--version`.
public enum TokenProxyVersion {
    /// The current version.
    public static let current = "0.1.0"
}
