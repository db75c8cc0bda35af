import Foundation

/// The Python interpreter of the interoperability tests: `$TOKENPROXY_PYTHON` when set, else
/// the project's own virtual environment (`.venv`, made by `scripts/test.sh` with the
/// packages of `Tests/Interop/requirements.txt`).
enum ProjectPython {
    /// The package's root folder, found from this file's place in `Tests/`.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The interpreter's path; the tests that need it fail with this path in their message
    /// when it is missing, so a machine without the environment never passes them silently.
    static var executable: String {
        if let configured = ProcessInfo.processInfo.environment["TOKENPROXY_PYTHON"], !configured.isEmpty {
            return configured
        }
        return packageRoot.appendingPathComponent(".venv/bin/python3").path
    }
}
