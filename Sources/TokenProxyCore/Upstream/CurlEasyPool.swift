/// Easy handles kept for reuse by one engine, so a request costs a `curl_easy_reset`
/// rather than an allocation and a free of libcurl's per-transfer state.
///
/// `curl_easy_reset` returns every option to its default (no header list, URL, CA file or
/// callback of the previous request survives); what it keeps is the connection cache, DNS
/// cache and TLS session cache, which the multi handle shares anyway, and cookies, whose
/// engine tokenproxy never enables. So nothing of one request leaks into the next.
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
