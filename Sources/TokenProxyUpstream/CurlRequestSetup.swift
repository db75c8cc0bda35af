import CCurl
import TokenProxyConfiguration
import TokenProxyHTTP

/// How an easy handle is set up for one upstream request: the URL, the protocols, TLS and
/// proxy settings allowed, the timeouts, the method and its body framing, and the header
/// list, all from an ``UpstreamRequest`` and the route's ``Options``. The
/// transfer adds its own userdata and callbacks; this type knows nothing of them.
/// Engine thread only, like every libcurl call.
package struct CurlRequestSetup {
    /// The settings of the connection itself, taken from the route (and its provider's client
    /// certificate): which protocols, which trust anchors, which client certificate. A class,
    /// so that a route whose settings are fixed makes them once and every request of it
    /// shares them (``Options`` then copies one reference, not four strings).
    package final class Connection: Sendable {
        let allowPlainHTTP: Bool
        let caFile: String?
        let clientCertificate: String?
        let clientKeyPEM: String?
        /// The client certificate itself (PEM), which wins over the file `clientCertificate`.
        /// Given as a blob, it is part of libcurl's match for a pooled connection (its
        /// `Curl_ssl_config_matches` compares certificate blobs byte by byte, where a file is
        /// compared by its path): a certificate rotated on disk is presented from the next
        /// connection on, and no connection that presented the old one is reused.
        let clientCertificatePEM: String?

        /// Settings of these parts.
        package init(
            allowPlainHTTP: Bool,
            caFile: String?,
            clientCertificate: String?,
            clientKeyPEM: String?,
            clientCertificatePEM: String? = nil
        ) {
            self.allowPlainHTTP = allowPlainHTTP
            self.caFile = caFile
            self.clientCertificate = clientCertificate
            self.clientKeyPEM = clientKeyPEM
            self.clientCertificatePEM = clientCertificatePEM
        }
    }

    /// TLS, protocol and timeout settings taken from the route and the limits.
    package struct Options: Sendable {
        /// The connection's protocols, trust anchors and client certificate.
        var connection: Connection
        var connectTimeout: Double
        var firstByteTimeout: Double
        /// The whole life of the transfer, connect to last byte (`CURLOPT_TIMEOUT_MS`); nil for
        /// none (client traffic, whose body may stream for as long as it brings bytes).
        var totalTimeout: Double? = nil
        /// How long the response may bring no byte once its head arrived; nil for no limit.
        /// Time paused for a slow client does not count (the client's own send deadline
        /// bounds that).
        var idleTimeout: Double? = nil
        /// Whether libcurl may send the request a second time by itself (it does when a
        /// connection from its cache turns out closed before any answer): only for idempotent
        /// methods (RFC 9110 §9.2.2); for the others that second send is stopped and the
        /// transfer fails instead.
        var resendable = true
        /// Whether the request must go out on a new connection rather than one from the cache
        /// (`CURLOPT_FRESH_CONNECT`): for a request sent again after a reused one failed.
        var freshConnection = false

        /// Options for one transfer over `connection`; the others keep their defaults.
        package init(
            connection: Connection,
            connectTimeout: Double,
            firstByteTimeout: Double,
            totalTimeout: Double? = nil,
            idleTimeout: Double? = nil,
            resendable: Bool = true,
            freshConnection: Bool = false
        ) {
            self.connection = connection
            self.connectTimeout = connectTimeout
            self.firstByteTimeout = firstByteTimeout
            self.totalTimeout = totalTimeout
            self.idleTimeout = idleTimeout
            self.resendable = resendable
            self.freshConnection = freshConnection
        }

        /// Options for one transfer; the others keep their defaults.
        package init(
            allowPlainHTTP: Bool,
            caFile: String?,
            clientCertificate: String?,
            clientKeyPEM: String?,
            clientCertificatePEM: String? = nil,
            connectTimeout: Double,
            firstByteTimeout: Double,
            totalTimeout: Double? = nil,
            idleTimeout: Double? = nil,
            resendable: Bool = true,
            freshConnection: Bool = false
        ) {
            self.init(
                connection: Connection(
                    allowPlainHTTP: allowPlainHTTP,
                    caFile: caFile,
                    clientCertificate: clientCertificate,
                    clientKeyPEM: clientKeyPEM,
                    clientCertificatePEM: clientCertificatePEM
                ),
                connectTimeout: connectTimeout,
                firstByteTimeout: firstByteTimeout,
                totalTimeout: totalTimeout,
                idleTimeout: idleTimeout,
                resendable: resendable,
                freshConnection: freshConnection
            )
        }
    }

    /// The request to send.
    let request: UpstreamRequest
    /// The route's settings for it.
    let options: Options

    /// Whether libcurl uploads a request body, read through the transfer's read callback
    /// (a HEAD request never sends one).
    var uploadsBody: Bool {
        self.request.body != .none && self.request.method != "HEAD"
    }

    /// Sets the request's options on `easy`. Returns whether libcurl accepted every one that
    /// matters, and the header list, which must stay alive until the transfer left the multi
    /// handle; the caller frees it (`curl_slist_free_all`) then, accepted or not.
    func configure(_ easy: CurlEasy) -> (accepted: Bool, headers: UnsafeMutablePointer<curl_slist>?) {
        var ok = true
        func set(_ accepted: Bool) {
            if !accepted { ok = false }
        }
        set(easy.set(CURLOPT_URL, self.request.url))
        set(Self.configureConnection(easy, self.options))
        set(easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)))
        set(easy.set(CURLOPT_TCP_KEEPALIVE, 1))
        // A size for fewer, larger write callbacks on downloads. libcurl refuses to change it
        // on a reused handle whose buffer already exists (it then keeps its default read
        // size), so the result is not checked: it is a speed setting, not a safety one.
        _ = easy.set(CURLOPT_BUFFERSIZE, 128 * 1024)
        set(easy.set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(self.options.connectTimeout)))
        if let total = self.options.totalTimeout {
            // The whole life: connect, TLS handshake, head, and every body byte.
            set(easy.set(CURLOPT_TIMEOUT_MS, Self.milliseconds(total)))
        }
        if self.options.freshConnection {
            set(easy.set(CURLOPT_FRESH_CONNECT, 1))
        }
        set(self.configureMethod(easy))
        let headers = self.headerList()
        set(easy.set(headers: headers))
        return (ok, headers)
    }

    /// The settings of the connection itself, for a request and for a tunnel alike: only the
    /// route's upstream, never redirects, never another protocol, never an environment proxy,
    /// the path exactly as built, certificates verified against the route's trust anchors,
    /// and its client certificate (`docs/reference/security.md`). Whether libcurl accepted
    /// every option.
    static func configureConnection(_ easy: CurlEasy, _ options: Options) -> Bool {
        let options = options.connection
        var ok = true
        func set(_ accepted: Bool) {
            if !accepted { ok = false }
        }
        set(easy.set(CURLOPT_PROTOCOLS_STR, options.allowPlainHTTP ? "http,https" : "https"))
        set(easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "https"))
        set(easy.set(CURLOPT_FOLLOWLOCATION, 0))
        set(easy.set(CURLOPT_PROXY, ""))
        // Every host is exempt from proxies, which also keeps libcurl from looking up
        // `no_proxy` and `NO_PROXY` in the environment for every transfer.
        set(easy.set(CURLOPT_NOPROXY, "*"))
        set(easy.set(CURLOPT_PATH_AS_IS, 1))
        set(easy.set(CURLOPT_NOSIGNAL, 1))
        set(easy.set(CURLOPT_SSL_VERIFYPEER, 1))
        set(easy.set(CURLOPT_SSL_VERIFYHOST, 2))
        if let caFile = options.caFile {
            set(easy.set(CURLOPT_CAINFO, caFile))
        }
        if let certificate = options.clientCertificatePEM {
            set(easy.set(CURLOPT_SSLCERTTYPE, "PEM"))
            set(easy.set(CURLOPT_SSLCERT_BLOB, blob: Array(certificate.utf8)))
        } else if let certificate = options.clientCertificate {
            set(easy.set(CURLOPT_SSLCERT, certificate))
        }
        if let key = options.clientKeyPEM {
            set(easy.set(CURLOPT_SSLKEYTYPE, "PEM"))
            set(easy.set(CURLOPT_SSLKEY_BLOB, blob: Array(key.utf8)))
        }
        return ok
    }

    /// The method and how its body is framed; whether libcurl accepted every option.
    private func configureMethod(_ easy: CurlEasy) -> Bool {
        var ok = true
        if self.request.body == .none || self.request.method == "HEAD" {
            // Without a body, libcurl's upload buffer only carries the request head over TLS
            // with HTTP/1.1 (a larger head goes out in several pieces; a test sends 21 KB).
            // libcurl allocates the buffer for every request and frees it at the end: 16 KiB,
            // its minimum, instead of the default 64 KiB stays below the size whose `free`
            // makes glibc consolidate its free lists.
            ok = easy.set(CURLOPT_UPLOAD_BUFFERSIZE, 16 * 1024) && ok
        }
        switch (self.request.method, self.request.body) {
        case ("HEAD", _):
            ok = easy.set(CURLOPT_NOBODY, 1) && ok
        case ("GET", .none):
            ok = easy.set(CURLOPT_HTTPGET, 1) && ok
        case (let method, .none):
            ok = easy.set(CURLOPT_CUSTOMREQUEST, method) && ok
        case (let method, let body):
            ok = easy.set(CURLOPT_UPLOAD, 1) && ok
            ok = easy.set(CURLOPT_CUSTOMREQUEST, method) && ok
            if case .length(let length) = body {
                ok = easy.set(CURLOPT_INFILESIZE_LARGE, size: length) && ok
            }
        }
        return ok
    }

    /// The request's fields as libcurl's header list, with the fields libcurl would add on
    /// its own blanked.
    private func headerList() -> UnsafeMutablePointer<curl_slist>? {
        var list: UnsafeMutablePointer<curl_slist>?
        self.request.headers.forEachField { name, value in
            // Names and values were checked by the parser; check again at the boundary, since
            // a CR, LF or NUL here would split the upstream request.
            guard HTTPGrammar.isToken(name), HTTPGrammar.isValidFieldValue(value) else { return }
            // The line is laid out in scratch memory (on the stack unless it is large), since
            // libcurl copies it.
            withUnsafeTemporaryAllocation(of: CChar.self, capacity: name.count + value.count + 3) { line in
                list = curl_slist_append(list, Self.fieldLine(name: name, value: value, into: line))
            }
        }
        // Headers libcurl would add on its own: the client decides, not the proxy.
        list = curl_slist_append(list, "Expect:")
        if !self.request.headers.contains("Accept") {
            list = curl_slist_append(list, "Accept:")
        }
        return list
    }

    /// Writes `Name: value` into `line`, NUL-terminated, and returns its start. "Name:" would
    /// tell libcurl to drop the field; an empty value is written "Name;", which sends it empty.
    private static func fieldLine(
        name: UnsafeBufferPointer<UInt8>,
        value: UnsafeBufferPointer<UInt8>,
        into line: UnsafeMutableBufferPointer<CChar>
    ) -> UnsafeMutablePointer<CChar>? {
        let bytes = UnsafeMutableRawBufferPointer(line)
        var end = name.count
        bytes.copyMemory(from: UnsafeRawBufferPointer(name))
        if value.isEmpty {
            bytes[end] = UInt8(ascii: ";")
            end += 1
        } else {
            bytes[end] = UInt8(ascii: ":")
            bytes[end + 1] = UInt8(ascii: " ")
            end += 2
            UnsafeMutableRawBufferPointer(rebasing: bytes[end...]).copyMemory(from: UnsafeRawBufferPointer(value))
            end += value.count
        }
        bytes[end] = 0
        return line.baseAddress
    }

    /// `seconds` as whole milliseconds for libcurl, at least 1 (0 would mean "no timeout").
    /// The value is already bounded by the configuration (at most a day).
    static func milliseconds(_ seconds: Double) -> Int {
        guard seconds.isFinite, seconds > 0 else { return 1 }
        return max(1, Int(min(seconds, Limits.maxSeconds) * 1000))
    }
}
