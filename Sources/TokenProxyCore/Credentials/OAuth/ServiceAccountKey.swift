import Foundation

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

    /// Reads and decodes the key file; the error never contains the key.
    static func load(_ path: String) throws(ConfigurationError) -> ServiceAccountKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(path: "service_account_file", message: "cannot read \(path)")
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
