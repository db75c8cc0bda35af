/// The `oauth_problem` a provider names in a `WWW-Authenticate: OAuth …` challenge (the
/// OAuth Problem Reporting extension to RFC 5849).
enum OAuth1Problem {
    /// Problems that mean the access token itself is no good.
    static let tokenProblems: Set<String> = ["token_rejected", "token_revoked", "token_expired", "token_used"]

    /// The first `oauth_problem` value in `challenges`, when it is a plain token (letters,
    /// digits and `_`, at most 64 characters), so nothing else of an upstream's text is
    /// repeated.
    static func named(in challenges: [String]) -> String? {
        for challenge in challenges {
            guard let start = challenge.range(of: "oauth_problem=") else { continue }
            let value = challenge[start.upperBound...].drop { $0 == "\"" }.prefix {
                $0 != "\"" && $0 != "," && $0 != " "
            }
            if !value.isEmpty, value.count <= 64,
                value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
            {
                return String(value)
            }
        }
        return nil
    }
}
