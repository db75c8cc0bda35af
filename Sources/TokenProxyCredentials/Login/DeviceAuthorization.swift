import Foundation
import Logging
import TokenProxySupport
import TokenProxyUpstream

/// A device authorization response (RFC 8628 §3.2).
struct DeviceAuthorization: Sendable, Equatable {
    var deviceCode: String
    var prompt: DeviceCodeLogin.Prompt
    var interval: Double?

    static func parse(_ response: UpstreamResponse) -> Result<DeviceAuthorization, LoginError> {
        let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        guard let object else {
            return .failure(
                LoginError(.exchangeFailed, "device authorization: not a JSON answer (HTTP \(response.status))")
            )
        }
        guard response.status == 200 else {
            let error = object["error"] as? String ?? "HTTP \(response.status)"
            let description = (object["error_description"] as? String).map { ": \($0)" } ?? ""
            return .failure(LoginError(.exchangeFailed, "device authorization: \(error)\(description)"))
        }
        // Some servers (Google's among them) still say verification_url, an earlier draft's name.
        guard let deviceCode = object["device_code"] as? String, !deviceCode.isEmpty,
            let userCode = object["user_code"] as? String, !userCode.isEmpty,
            let uri = object["verification_uri"] as? String ?? object["verification_url"] as? String
        else {
            return .failure(
                LoginError(.exchangeFailed, "device authorization: device_code, user_code or verification_uri missing")
            )
        }
        // Bounded, whatever the server says: a code valid between 10 s and a day, polled at
        // least once a minute.
        func number(_ key: String, in range: ClosedRange<Double>) -> Double? {
            guard let value = BoundedSeconds.number(object[key]) else { return nil }
            return min(max(value, range.lowerBound), range.upperBound)
        }
        return .success(
            DeviceAuthorization(
                deviceCode: deviceCode,
                prompt: DeviceCodeLogin.Prompt(
                    userCode: userCode,
                    verificationURI: uri,
                    verificationURIComplete: object["verification_uri_complete"] as? String,
                    expiresIn: number("expires_in", in: 10...86400) ?? 600
                ),
                interval: number("interval", in: 1...60)
            )
        )
    }
}
