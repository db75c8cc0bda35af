import Foundation

/// A header every client request must carry (`require_header`), a defence against browser
/// request forgery: a web page cannot add a custom header to a cross-site request without a
/// CORS preflight, which the proxy never answers. Requests without it get 403 `header_required`.
package struct HeaderRequirement: Sendable, Equatable, Decodable {
    /// The header name, an RFC 9110 token (compared case-insensitively).
    package var name: String
    /// The value the header must have, compared exactly.
    package var value: Secret

    /// Creates a requirement for header `name` with `value`.
    package init(name: String, value: Secret) {
        self.name = name
        self.value = value
    }

    /// Decodes `{"name": NAME, "value": SECRET}`; both keys are required.
    package init(from decoder: any Decoder) throws {
        self = try decoder.withConfigurationProblems { problems in
            let object = try decoder.configurationObject(keyedBy: ConfigurationCodingKey.self, problems)
            _ = decoder.configurationKeys(known: ["name", "value"], problems)
            let nameKey = ConfigurationCodingKey("name")
            let valueKey = ConfigurationCodingKey("value")
            let name = object.configValue(String.self, forKey: nameKey, problems)
            let value = object.configValue(Secret.self, forKey: valueKey, problems)
            if !object.contains(nameKey) { problems.add(at: decoder.codingPath + [nameKey], "missing required key") }
            if !object.contains(valueKey) { problems.add(at: decoder.codingPath + [valueKey], "missing required key") }
            guard let name, let value else { throw ConfigurationProblemReported() }
            return HeaderRequirement(name: name, value: value)
        }
    }
}
