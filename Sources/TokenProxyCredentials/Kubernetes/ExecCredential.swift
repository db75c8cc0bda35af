import Foundation
import TokenProxySupport

/// The `ExecCredential` object a Kubernetes exec credential plugin prints on stdout for
/// kubectl and other client-go programs: the API version the caller asked for, the bearer
/// token, and its expiry when known so the caller asks again in time
/// (Kubernetes documentation, "client-go credential plugins").
package struct ExecCredential: Sendable, Equatable {
    /// The `client.authentication.k8s.io` versions a plugin may be asked to answer in.
    package enum APIVersion: String, Sendable, CaseIterable {
        /// The stable version, and the answer when the caller names none.
        case v1 = "client.authentication.k8s.io/v1"
        /// The beta version older clients and kubeconfigs still use.
        case v1beta1 = "client.authentication.k8s.io/v1beta1"
    }

    /// The version the object is written in.
    package var apiVersion: APIVersion
    /// The bearer token (`status.token`).
    package var token: String
    /// When the token expires (`status.expirationTimestamp`); nil when unknown, and then
    /// the field is left out so the caller keeps the token until the server refuses it.
    package var expiration: Date?

    /// Creates the object for `token`, expiring at `expiration` when known.
    package init(apiVersion: APIVersion, token: String, expiration: Date?) {
        self.apiVersion = apiVersion
        self.token = token
        self.expiration = expiration
    }

    /// The JSON document with a trailing newline: `apiVersion`, `kind` and `status`, the
    /// strings escaped by `JSONEncoder`, the expiry as an RFC 3339 UTC timestamp in whole
    /// seconds (RFC 3339 §5.6), rounded down so the caller never trusts the token longer
    /// than it lives.
    package var json: [UInt8] {
        let timestamp = self.expiration.map { expiration -> String in
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime]
            let whole = Date(timeIntervalSince1970: expiration.timeIntervalSince1970.rounded(.down))
            return formatter.string(from: whole)
        }
        let document = Document(
            apiVersion: self.apiVersion.rawValue,
            kind: "ExecCredential",
            status: Status(token: self.token, expirationTimestamp: timestamp)
        )
        return JSONOutput.encode(document)
    }

    private struct Document: Encodable {
        var apiVersion: String
        var kind: String
        var status: Status
    }

    private struct Status: Encodable {
        var token: String
        var expirationTimestamp: String?
    }
}
