import TokenProxyCredentials
import TokenProxyHTTP
import TokenProxyUpstream

/// Builds ``UpstreamRequest``s: hop-by-hop removal, `X-Forwarded-*`, Host, the route's
/// header edits and the credential (`docs/reference/upstream.md`, "Request headers").
enum UpstreamRequestBuilder {
    /// The `X-Forwarded-*` fields, set anew for this hop.
    static let forwarded = HeaderNameSet(["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host"])

    /// A DPoP proof (RFC 9449 §4.1), which goes with the credential it proves.
    static let proof = HeaderNameSet(["dpop"])

    /// Fields that front proxies set to tell an upstream which path was really asked for, and
    /// that IIS, Symfony, Zend and Spring route by: from a client they would move the request
    /// out of the route's base path (`docs/reference/http-behaviour.md`, "A route's base path is a
    /// boundary"), so they are never forwarded.
    static let pathOverrides = HeaderNameSet([
        "x-original-url", "x-rewrite-url", "x-original-uri", "x-override-url", "x-forwarded-prefix",
    ])

    /// Builds the request for `head` along `match`. `credential` is nil for routes without a
    /// provider, or when the client's own credential is kept.
    static func build(
        head: HTTPRequestHead,
        match: Router.Match,
        url: String,
        credential: CredentialHeader?,
        clientAddress: String
    ) -> UpstreamRequest {
        // The route's fields are read where the router keeps them: a copy of the whole route
        // would retain each of its strings and lists.
        var headers = head.headers
        // One copy with room for what is added below (forwarding fields, Host, the route's
        // fields, the credential).
        headers.reserveCapacity(headers.count + match.route.addHeaders.count + 5)

        // One pass removes what never goes upstream as the client sent it: hop-by-hop and
        // framing fields, the fields the client's Connection header names (processed before
        // anything is injected, so a client cannot name the credential as hop-by-hop; RFC 9110
        // §7.6.1), the route's `remove_headers`, the proxy's own fields (the `require_header`
        // secret), the client's credential header where the proxy sets it, path overrides,
        // and `X-Forwarded-*`, set again below.
        // Which of the client's fields this needs by name, found in one pass first: most
        // requests have no Connection or X-Forwarded-For field, and then no list is made.
        var hasConnection = false
        var hasForwardedFor = false
        head.headers.forEachField { name, _ in
            if name.count == 10 {
                hasConnection = hasConnection || HTTPHeaders.name(name, is: "connection")
            } else if name.count == 15 {
                hasForwardedFor = hasForwardedFor || HTTPHeaders.name(name, is: "x-forwarded-for")
            }
        }
        var named = hasConnection ? head.headers.tokens("Connection") : []
        if !match.route.removeHeaders.isEmpty {
            named += match.route.removeHeaders
        }
        if !match.withheldHeaders.isEmpty {
            named += match.withheldHeaders
        }
        // The credential header is matched on its own rather than appended to `named`, which
        // would copy that list for every request.
        var credentialHeader: String?
        if match.route.provider != nil, match.route.incomingAuthorization == .replace || credential != nil {
            credentialHeader = credential?.name ?? "Authorization"
        }
        // A client's own DPoP proof goes where its credential goes (RFC 9449 §7.1): it belongs
        // to the Authorization the proxy replaces.
        let replacesProof = credentialHeader != nil
        headers.removeAll { name in
            UpstreamRequest.hopByHop.contains(name) || Self.forwarded.contains(name)
                || Self.pathOverrides.contains(name)
                || credentialHeader.map { HTTPHeaders.name(name, equals: $0) } == true
                || (replacesProof && Self.proof.contains(name))
                || (!named.isEmpty && named.contains { HTTPHeaders.name(name, equals: $0) })
        }

        // X-Forwarded-For accumulates; Proto and Host describe this hop only.
        let forwardedFor = hasForwardedFor ? head.headers.values("X-Forwarded-For").joined(separator: ", ") : ""
        // A client on a Unix socket has no address; RFC 7239 §6.3 names such a node `unknown`.
        let client = clientAddress == "unix" ? "unknown" : clientAddress
        headers.add(name: "X-Forwarded-For", value: forwardedFor.isEmpty ? client : "\(forwardedFor), \(client)")
        headers.add(name: "X-Forwarded-Proto", value: "http")
        if let host = head.authority {
            headers.add(name: "X-Forwarded-Host", value: host)
            if match.route.preserveHost {
                headers.add(name: "Host", value: host)
            }
        }
        for name in match.route.addHeaders.isEmpty ? [] : match.route.addHeaders.keys.sorted() {
            if let value = match.route.addHeaders[name] {
                headers.replaceOrAdd(name: name, value: value)
            }
        }
        if let credential {
            headers.add(name: credential.name, value: credential.value)
            if let proof = credential.proof {
                headers.add(name: "DPoP", value: proof)
            }
        }

        let body: UpstreamRequest.Body
        switch head.framing {
        case .none: body = .none
        case .contentLength(let length): body = .length(length)
        case .chunked: body = .streamed
        }
        return UpstreamRequest(method: head.method, url: url, headers: headers, body: body)
    }
}
