import Foundation
import TokenProxySupport

/// Reads a credential command's stdout: a bare token, or a JSON object with
/// `access_token` and optional `expires_in`.
enum CommandOutputParser {
    /// Why output was refused; never contains the output itself.
    struct Refusal: Error, Equatable, CustomStringConvertible {
        var description: String
    }

    static func parse(_ stdout: Data) -> Result<(String, Double?), Refusal> {
        guard let text = String(data: stdout, encoding: .utf8) else {
            return .failure(Refusal(description: "not UTF-8"))
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return .failure(Refusal(description: "empty")) }
        if trimmed.hasPrefix("{") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [String: Any] else {
                return .failure(Refusal(description: "invalid JSON"))
            }
            guard let token = object["access_token"] as? String, !token.isEmpty else {
                return .failure(Refusal(description: "JSON without a string access_token"))
            }
            if let problem = TokenSyntax.problem(token) {
                return .failure(Refusal(description: problem))
            }
            var expiresIn: Double?
            if let value = object["expires_in"], !(value is NSNull) {
                guard let number = BoundedSeconds.number(value), number > 0, number <= BoundedSeconds.maximumLifetime
                else {
                    return .failure(Refusal(description: "expires_in is not a sensible number of seconds"))
                }
                expiresIn = number
            }
            return .success((token, expiresIn))
        }
        guard !trimmed.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true })
        else {
            return .failure(Refusal(description: "more than one word; print only the token, or JSON"))
        }
        if let problem = TokenSyntax.problem(trimmed) {
            return .failure(Refusal(description: problem))
        }
        return .success((trimmed, nil))
    }
}
