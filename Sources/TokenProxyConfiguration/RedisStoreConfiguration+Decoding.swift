import Foundation

extension RedisStoreConfiguration: Decodable {
    /// Decodes `{"url": URL, "password": SECRET, "encryption_key": SECRET, "key_prefix": TEXT}`:
    /// `url` and `encryption_key` are required, `password` overrides the URL's, and the key
    /// prefix defaults to `tokenproxy:`. Every problem is recorded with its path.
    package init(from decoder: any Decoder) throws {
        self = try decoder.withConfigurationProblems { problems in
            let object = try decoder.configurationObject(keyedBy: ConfigurationCodingKey.self, problems)
            _ = decoder.configurationKeys(known: ["url", "password", "encryption_key", "key_prefix"], problems)
            let urlKey = ConfigurationCodingKey("url")
            let keyKey = ConfigurationCodingKey("encryption_key")
            let prefixKey = ConfigurationCodingKey("key_prefix")
            let url = object.configValue(String.self, forKey: urlKey, problems)
            let password = object.configValue(Secret.self, forKey: ConfigurationCodingKey("password"), problems)
            let key = object.configValue(Secret.self, forKey: keyKey, problems)
            let prefix = object.configValue(String.self, forKey: prefixKey, problems)

            var parsed: ParsedURL?
            if let url {
                switch Self.parse(url: url) {
                case .success(let found): parsed = found
                case .failure(let error):
                    for problem in error.problems { problems.add(at: decoder.codingPath + [urlKey], problem.message) }
                }
            } else if object.contains(urlKey) == false {
                problems.add(at: decoder.codingPath + [urlKey], "is required: redis://HOST:PORT[/DB] or unix:///PATH")
            }
            if key == nil, !object.contains(keyKey) {
                problems.add(
                    at: decoder.codingPath + [keyKey],
                    "is required: Redis holds only sealed values (a random key, openssl rand -base64 32)"
                )
            }
            if let prefix, let problem = Self.keyPrefixProblem(prefix) {
                problems.add(at: decoder.codingPath + [prefixKey], problem)
            }
            guard let parsed, let key else { throw ConfigurationProblemReported() }
            return RedisStoreConfiguration(
                address: parsed.address,
                username: parsed.username,
                password: password ?? parsed.password.map(Secret.literal),
                database: parsed.database,
                encryptionKey: key,
                keyPrefix: prefix ?? Self.defaultKeyPrefix
            )
        }
    }

    /// Why `prefix` cannot be a key prefix: at most 128 printable ASCII characters without
    /// spaces, so every key stays readable in `redis-cli` and an ACL key pattern can name it.
    static func keyPrefixProblem(_ prefix: String) -> String? {
        guard prefix.utf8.count <= 128 else { return "must be at most 128 characters" }
        guard prefix.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return "must be printable ASCII without spaces"
        }
        return nil
    }
}
