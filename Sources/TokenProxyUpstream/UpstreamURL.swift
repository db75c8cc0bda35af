import CCurl

/// Builds upstream URLs from parsed parts with libcurl's URL API (`curl_url`), never by
/// concatenating client input into a URL string: the scheme, host and port always come
/// from the route's `upstream`, so a path like `/@evil/x` or `//evil/x` stays a path.
package struct UpstreamURL: Sendable, Equatable {
    /// The route's upstream split into parts, parsed once when the route is set up; the
    /// parts are constants, so the origin made from them stays true. A class, so that each
    /// request taking its route's base holds one reference rather than a copy of its strings.
    package final class Base: Sendable, Equatable {
        /// `https` or `http`.
        package let scheme: String
        /// The host, as libcurl normalized it.
        package let host: String
        /// The explicit port, if any.
        package let port: String?
        /// The base path without a trailing slash (empty for the root).
        package let path: String
        /// The base URL's own query, if any.
        package let query: String?
        /// The base URL as given.
        package let url: String
        /// `scheme://host[:port]`: the upstream's origin, for building request URLs and for
        /// recognising the upstream's own redirects.
        package let origin: String

        init(scheme: String, host: String, port: String?, path: String, query: String?, url: String) {
            self.scheme = scheme
            self.host = host
            self.port = port
            self.path = path
            self.query = query
            self.url = url
            let defaultPort = scheme == "https" ? "443" : "80"
            if let port, port != defaultPort {
                self.origin = "\(scheme)://\(host):\(port)"
            } else {
                self.origin = "\(scheme)://\(host)"
            }
        }

        /// Bases are equal when their parts are (the origin is made from them).
        package static func == (lhs: Base, rhs: Base) -> Bool {
            lhs.scheme == rhs.scheme && lhs.host == rhs.host && lhs.port == rhs.port && lhs.path == rhs.path
                && lhs.query == rhs.query && lhs.url == rhs.url
        }
    }

    /// An error parsing a base URL or setting a part.
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// What failed.
        package var description: String
    }

    /// Parses a route's upstream URL.
    package static func parseBase(_ upstream: String) throws(Failure) -> Base {
        CurlGlobal.initialize()
        guard let handle = curl_url() else { throw Failure(description: "out of memory") }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, upstream, 0) == CURLUE_OK else {
            throw Failure(description: "invalid upstream URL")
        }
        guard let scheme = Self.part(handle, CURLUPART_SCHEME), let host = Self.part(handle, CURLUPART_HOST) else {
            throw Failure(description: "upstream URL needs a scheme and a host")
        }
        var path = Self.part(handle, CURLUPART_PATH) ?? ""
        while path.hasSuffix("/") {
            path.removeLast()
        }
        // What follows the origin in a request URL must start with `/` (see `build`).
        guard path.isEmpty || path.hasPrefix("/") else {
            throw Failure(description: "the upstream URL's path does not start with /")
        }
        let effectivePort = Self.part(handle, CURLUPART_PORT, flags: UInt32(CURLU_DEFAULT_PORT))
        let base = Base(
            scheme: scheme.lowercased(),
            host: host,
            port: Self.part(handle, CURLUPART_PORT),
            path: path,
            query: Self.part(handle, CURLUPART_QUERY),
            url: upstream
        )
        // Request URLs are the origin followed by a path starting with `/`, so the origin
        // alone decides scheme, host and port: check once that libcurl reads it back as such
        // (an explicit default port, dropped from the origin, reads back as the default).
        guard curl_url_set(handle, CURLUPART_URL, base.origin + "/", 0) == CURLUE_OK,
            Self.part(handle, CURLUPART_SCHEME)?.equalsIgnoringASCIICase(base.scheme) == true,
            Self.part(handle, CURLUPART_HOST) == base.host,
            Self.part(handle, CURLUPART_PORT, flags: UInt32(CURLU_DEFAULT_PORT)) == effectivePort
        else {
            throw Failure(description: "the upstream URL's origin cannot be rebuilt")
        }
        return base
    }

    /// The full URL for a request whose remaining path is `path` (already percent-encoded as
    /// the client sent it, starting with `/` or empty) and whose raw query is `query`.
    ///
    /// The origin comes from the parsed base (checked once, in ``parseBase(_:)``, to read back
    /// as the same scheme, host and port); the client's path and query were checked by the
    /// parser (visible ASCII, no `#`, valid escapes) and are kept byte for byte, so signed URLs
    /// stay valid. The path after the origin always starts with `/`, which ends the authority:
    /// nothing the client sends can move the request to another host, port or scheme
    /// (`//evil/x` and `/@evil/x` are paths).
    ///
    /// This is the one place where a client's path becomes part of an upstream URL, so the
    /// base-path rule is applied here: a path that a normalising upstream could read as leaving
    /// the base path (``BasePathBoundary``) is refused. The query is not looked at.
    package static func build(base: Base, path: String, query: String?) throws(Failure) -> String {
        let hash = UInt8(ascii: "#")
        guard path.isEmpty || path.utf8.first == UInt8(ascii: "/"), !path.utf8.contains(hash),
            !(query?.utf8.contains(hash) ?? false)
        else {
            throw Failure(description: "invalid request path")
        }
        if let reason = BasePathBoundary.violation(in: path) {
            throw Failure(description: "\(reason), which could leave the route's base path")
        }
        // Written into one String of the right size: appending piece by piece grew it and
        // checked its storage once per piece, on every request.
        let slash = base.path.isEmpty && path.isEmpty
        var count = base.origin.utf8.count + base.path.utf8.count + path.utf8.count + (slash ? 1 : 0)
        if let baseQuery = base.query {
            count += 1 + baseQuery.utf8.count
        }
        if let query {
            count += 1 + query.utf8.count
        }
        return String(unsafeUninitializedCapacity: count) { buffer in
            var written = 0
            func put(_ piece: String) {
                var piece = piece
                piece.withUTF8 { bytes in
                    _ = UnsafeMutableBufferPointer(rebasing: buffer[written...]).initialize(fromContentsOf: bytes)
                    written += bytes.count
                }
            }
            func put(_ byte: UInt8) {
                buffer[written] = byte
                written += 1
            }
            put(base.origin)
            put(base.path)
            put(path)
            if slash {
                put(UInt8(ascii: "/"))
            }
            if let baseQuery = base.query {
                put(UInt8(ascii: "?"))
                put(baseQuery)
            }
            if let query {
                put(base.query == nil ? UInt8(ascii: "?") : UInt8(ascii: "&"))
                put(query)
            }
            return written
        }
    }

    private static func part(_ handle: OpaquePointer, _ part: CURLUPart, flags: UInt32 = 0) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, part, &value, flags) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return String(cString: value)
    }
}
