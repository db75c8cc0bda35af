/// Easy handles kept for reuse by one engine, so a request costs a `curl_easy_reset`
/// rather than an allocation and a free of libcurl's per-transfer state.
///
/// `curl_easy_reset` returns every option to its default (no header list, URL, CA file or
/// callback of the previous request survives); what it keeps is the handle's TLS session
/// cache (libcurl 7.88 keeps one per easy handle), so that a reused handle resumes a TLS
/// session when it reconnects, and cookies, whose engine tokenproxy never enables. The
/// connection and DNS caches belong to the multi handle. So nothing of one request leaks
/// into the next but TLS sessions, which libcurl offers again only to the same host and
/// port with the same TLS settings.
/// Confined to the engine's thread, like every other libcurl call.
struct CurlEasyPool {
    private var idle: [CurlEasy] = []
    private let capacity: Int

    /// A pool keeping at most `capacity` idle handles.
    init(capacity: Int = 256) {
        self.capacity = capacity
    }

    /// A handle with default options: a reused one, or a new one (nil when out of memory).
    mutating func take() -> CurlEasy? {
        if let easy = self.idle.popLast() {
            return easy
        }
        return CurlEasy()
    }

    /// Takes back a handle that was removed from the multi handle.
    mutating func recycle(_ easy: CurlEasy) {
        guard self.idle.count < self.capacity else {
            easy.cleanup()
            return
        }
        easy.reset()
        self.idle.append(easy)
    }
}
