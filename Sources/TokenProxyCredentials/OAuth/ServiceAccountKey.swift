import Foundation
import TokenProxyConfiguration

/// The fields tokenproxy uses from a Google service-account JSON key file.
struct ServiceAccountKey: Sendable, Decodable {
    var clientEmail: String
    var privateKey: String
    var privateKeyID: String?
    var tokenURI: String?

    private enum CodingKeys: String, CodingKey {
        case clientEmail = "client_email"
        case privateKey = "private_key"
        case privateKeyID = "private_key_id"
        case tokenURI = "token_uri"
    }

    /// Reads and decodes the key file under the secret-file rules (non-blocking, bounded,
    /// owner and mode checked at every read: `docs/reference/security.md`); the error never contains
    /// the key.
    static func load(_ path: String) throws(ConfigurationError) -> ServiceAccountKey {
        let data: Data
        do {
            data = Data(try Secret.file(path).resolve().utf8)
        } catch {
            throw ConfigurationError(path: "service_account_file", message: "\(error)")
        }
        do {
            return try JSONDecoder().decode(ServiceAccountKey.self, from: data)
        } catch {
            throw ConfigurationError(
                path: "service_account_file",
                message: "\(path) is not a service-account key (client_email and private_key are needed)"
            )
        }
    }
}
