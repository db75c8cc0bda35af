import CSystemShims
import Foundation

/// The version reported by `--version`, `status` and the admin `status` endpoint: the
/// repository's `VERSION` file, compiled in (docs/reference/cli.md, "Version").
package enum TokenProxyVersion {
    /// The release number, e.g. `0.2.0`: the `VERSION` file without surrounding whitespace.
    package static let current: String = {
        String(cString: tp_version_file()).trimmingCharacters(in: .whitespacesAndNewlines)
    }()

    /// What `--version` prints: the release number alone for a build of a release tag, and
    /// after it the commit for a build of any other commit, or that no commit was recorded.
    package static let description: String = {
        guard let commit = tp_recorded_build_commit() else {
            return "\(current) (commit not recorded)"
        }
        let name = String(cString: commit)
        return name.isEmpty ? current : "\(current) (commit \(name))"
    }()
}
