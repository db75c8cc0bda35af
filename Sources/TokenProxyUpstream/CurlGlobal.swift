import CCurl

/// libcurl's process-wide initialisation, done exactly once before any other libcurl call.
enum CurlGlobal {
    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    }()

    /// Initialises libcurl if it was not yet.
    static func initialize() {
        _ = self.initialized
    }
}
