import Foundation

/// One problem (or warning) found in a configuration, located by its JSON path.
///
/// Paths join object keys with `.` and write array indices as `[n]`, so a reader can find the
/// spot in the file: `routes[2].upstream`, `providers.github.token_url`, `listen`; the empty
/// path is the document itself. Messages never contain a secret value.
package struct ConfigurationProblem: Sendable, Equatable, CustomStringConvertible {
    /// The JSON path of the offending value, e.g. `routes[2].upstream`; `""` for the document.
    package var path: String
    /// What is wrong and, where possible, how to fix it.
    package var message: String

    /// Creates a problem at `path`.
    package init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// `path: message`, or only the message for the document itself.
    package var description: String {
        self.path.isEmpty ? self.message : "\(self.path): \(self.message)"
    }
}
