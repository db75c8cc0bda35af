import Foundation

extension ExecCredential {
    /// Why `KUBERNETES_EXEC_INFO` cannot be answered: the message names the problem and
    /// never repeats the variable's contents (they may hold cluster details).
    package struct ExecInfoError: Error, Sendable, Equatable, CustomStringConvertible {
        /// A one-line explanation for stderr.
        package var message: String
        /// The explanation.
        package var description: String { self.message }
    }

    /// The most bytes of `KUBERNETES_EXEC_INFO` read: the object holds the API version, the
    /// interactive flag and, with `provideClusterInfo`, the cluster's address and CA
    /// certificates, far below this.
    package static let execInfoLimit = 1 << 20

    /// The version to answer in, from the `KUBERNETES_EXEC_INFO` value client-go sets for
    /// its plugins: `.v1` when the variable is unset or empty, else the `apiVersion` of the
    /// JSON object it holds, which must be one of ``APIVersion``. Other fields are not
    /// used; anything that is not such an object is an error rather than a guess.
    package static func apiVersion(execInfo: String?) -> Result<APIVersion, ExecInfoError> {
        guard let execInfo, !execInfo.isEmpty else { return .success(.v1) }
        guard execInfo.utf8.count <= Self.execInfoLimit else {
            return .failure(ExecInfoError(message: "KUBERNETES_EXEC_INFO is longer than \(Self.execInfoLimit) bytes"))
        }
        let parsed = try? JSONSerialization.jsonObject(with: Data(execInfo.utf8), options: [])
        guard let object = parsed as? [String: Any] else {
            return .failure(ExecInfoError(message: "KUBERNETES_EXEC_INFO is not a JSON object"))
        }
        if let kind = object["kind"], kind as? String != "ExecCredential" {
            return .failure(ExecInfoError(message: "KUBERNETES_EXEC_INFO: kind is not \"ExecCredential\""))
        }
        guard let name = object["apiVersion"] as? String else {
            return .failure(ExecInfoError(message: "KUBERNETES_EXEC_INFO has no apiVersion string"))
        }
        guard let version = APIVersion(rawValue: name) else {
            let known = APIVersion.allCases.map(\.rawValue).joined(separator: ", ")
            let shown = name.prefix(100)
            let message = "KUBERNETES_EXEC_INFO: unsupported apiVersion \"\(shown)\" (supported: \(known))"
            return .failure(ExecInfoError(message: message))
        }
        return .success(version)
    }
}
