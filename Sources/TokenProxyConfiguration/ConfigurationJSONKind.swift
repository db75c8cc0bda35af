import Foundation

/// The kind of a JSON value, named in "expected a string, found a number" messages. Only the
/// kind is ever reported, never the value, which may be a secret.
enum ConfigurationJSONKind: Decodable, CustomStringConvertible {
    /// `null`.
    case null
    /// `true` or `false`.
    case boolean
    /// A number.
    case number
    /// A string.
    case string
    /// An array.
    case list
    /// An object.
    case object

    /// Finds the kind of the value under `decoder`.
    init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer() {
            if single.decodeNil() {
                self = .null
                return
            }
            if (try? single.decode(Bool.self)) != nil {
                self = .boolean
                return
            }
            if (try? single.decode(String.self)) != nil {
                self = .string
                return
            }
            if (try? single.decode(Double.self)) != nil {
                self = .number
                return
            }
        }
        if (try? decoder.unkeyedContainer()) != nil {
            self = .list
            return
        }
        if (try? decoder.container(keyedBy: ConfigurationCodingKey.self)) != nil {
            self = .object
            return
        }
        // A number too large for a Double is the only JSON value left.
        self = .number
    }

    /// The kind of the value under `decoder`, described for a message.
    static func probe(_ decoder: any Decoder) -> String? {
        (try? ConfigurationJSONKind(from: decoder))?.description
    }

    /// "a string", "a number", "null"...
    var description: String {
        switch self {
        case .null: return "null"
        case .boolean: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .list: return "a list"
        case .object: return "an object"
        }
    }
}

/// Names the Swift types the configuration decodes in terms of JSON, for messages.
enum ConfigurationTypeName {
    /// "a string", "an integer", "a list of strings"...
    static func of(_ type: Any.Type) -> String {
        switch ObjectIdentifier(type) {
        case ObjectIdentifier(String.self): return "a string"
        case ObjectIdentifier(Bool.self): return "true or false"
        case ObjectIdentifier(Int.self): return "an integer"
        case ObjectIdentifier(Double.self): return "a number"
        case ObjectIdentifier(UInt16.self): return "an integer from 0 to 65535"
        case ObjectIdentifier([String].self): return "a list of strings"
        case ObjectIdentifier([ConfigurationElement<String>].self): return "a list of strings"
        case ObjectIdentifier([String: String].self): return "an object whose values are strings"
        case ObjectIdentifier([String: ConfigurationElement<String>].self):
            return "an object whose values are strings"
        case ObjectIdentifier(Secret.self): return "a string, {\"env\": NAME} or {\"file\": PATH}"
        case ObjectIdentifier(ListenAddress.self): return "an address string (\"host:port\" or \"unix:/path\")"
        default: return type is any ConfigurationListMarker.Type ? "a list" : "an object"
        }
    }
}

/// Marks arrays, so that ``ConfigurationTypeName`` names any of them "a list".
protocol ConfigurationListMarker {}

extension Array: ConfigurationListMarker {}
