import CCurl

/// A libcurl easy handle: the one place the raw handle pointer lives, with typed setters for
/// the options tokenproxy uses, each returning whether libcurl accepted it.
///
/// A value type over a handle that libcurl owns: whoever takes one from ``CurlEasyPool`` gives
/// it back with ``CurlEasyPool/recycle(_:)`` (or ``cleanup()``) once it left the multi handle.
/// Confined to its engine's thread, like every libcurl call.
struct CurlEasy {
    private let handle: UnsafeMutableRawPointer

    /// A new handle with default options; nil when libcurl is out of memory.
    init?() {
        guard let handle = curl_easy_init() else { return nil }
        self.handle = handle
    }

    /// Frees the handle. It must not be used afterwards.
    func cleanup() {
        curl_easy_cleanup(self.handle)
    }

    /// Returns every option to its default; the caches the multi handle shares are kept.
    func reset() {
        curl_easy_reset(self.handle)
    }

    /// Sets a numeric option.
    func set(_ option: CURLoption, _ value: Int) -> Bool {
        tp_easy_setopt_long(self.handle, option, value) == CURLE_OK
    }

    /// Sets a string option; libcurl copies it.
    func set(_ option: CURLoption, _ value: String) -> Bool {
        // `withCString` lends a native string's own bytes (a short one's from the stack), where
        // the implicit conversion to a C string copied short ones to the heap.
        value.withCString { tp_easy_setopt_string(self.handle, option, $0) == CURLE_OK }
    }

    /// Sets a size option (`CURLOPT_INFILESIZE_LARGE`).
    func set(_ option: CURLoption, size: Int64) -> Bool {
        tp_easy_setopt_off_t(self.handle, option, curl_off_t(size)) == CURLE_OK
    }

    /// Sets a pointer option (userdata, the error buffer); the pointer must outlive the handle's
    /// use of it.
    func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) -> Bool {
        tp_easy_setopt_pointer(self.handle, option, pointer) == CURLE_OK
    }

    /// Sets the request's header list; it must stay alive until the transfer left the multi
    /// handle.
    func set(headers: UnsafeMutablePointer<curl_slist>?) -> Bool {
        tp_easy_setopt_slist(self.handle, CURLOPT_HTTPHEADER, headers) == CURLE_OK
    }

    /// Sets a blob option from `bytes`, which libcurl copies (`CURL_BLOB_COPY`).
    func set(_ option: CURLoption, blob bytes: [UInt8]) -> Bool {
        var bytes = bytes
        return bytes.withUnsafeMutableBytes { raw in
            var blob = curl_blob(data: raw.baseAddress, len: raw.count, flags: UInt32(CURL_BLOB_COPY))
            return tp_easy_setopt_pointer(self.handle, option, &blob) == CURLE_OK
        }
    }

    /// The callback libcurl hands response body bytes to.
    func setWriteCallback(_ callback: CurlEasy.DataCallback) -> Bool {
        tp_easy_setopt_write_callback(self.handle, callback) == CURLE_OK
    }

    /// The callback libcurl takes request body bytes from.
    func setReadCallback(_ callback: CurlEasy.DataCallback) -> Bool {
        tp_easy_setopt_read_callback(self.handle, callback) == CURLE_OK
    }

    /// The callback libcurl hands each response header line to.
    func setHeaderCallback(_ callback: CurlEasy.DataCallback) -> Bool {
        tp_easy_setopt_header_callback(self.handle, callback) == CURLE_OK
    }

    /// The callback that opens the handle's sockets.
    func setOpenSocketCallback(_ callback: CurlEasy.OpenSocketCallback) -> Bool {
        tp_easy_setopt_opensocket_callback(self.handle, callback) == CURLE_OK
    }

    /// The callback libcurl calls each time it is about to send the request on a connection
    /// (`CURLOPT_PREREQFUNCTION`); its data pointer is `CURLOPT_PREREQDATA`.
    func setPrerequestCallback(_ callback: CurlEasy.PrerequestCallback) -> Bool {
        tp_easy_setopt_prereq_callback(self.handle, callback) == CURLE_OK
    }

    /// Whether the last transfer went out on a connection taken from the cache: libcurl
    /// counted no new connection for it (`CURLINFO_NUM_CONNECTS` is 0; the count is reset when
    /// a transfer starts, and a connection libcurl reopened itself counts). Nil when libcurl
    /// cannot tell.
    var reusedConnection: Bool? {
        var connects = 0
        guard tp_easy_getinfo_long(self.handle, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK else { return nil }
        return connects == 0
    }

    /// Whether the last transfer got as far as sending its request: connected, TLS done
    /// (`CURLINFO_PRETRANSFER_TIME_T` is above zero). A timeout after that is the upstream's
    /// silence, one before it a connection that could not be made.
    var sentRequest: Bool {
        var microseconds: curl_off_t = 0
        guard tp_easy_getinfo_off_t(self.handle, CURLINFO_PRETRANSFER_TIME_T, &microseconds) == CURLE_OK else {
            return false
        }
        return microseconds > 0
    }

    /// Runs the transfer to its end on the calling thread (`curl_easy_perform`); for a
    /// connect-only handle, until the connection (and its TLS handshake) is made.
    func perform() -> CURLcode {
        curl_easy_perform(self.handle)
    }

    /// Sends what the connection of a connect-only handle takes now of `bytes`.
    func send(_ bytes: UnsafeRawBufferPointer, sent: inout Int) -> CURLcode {
        curl_easy_send(self.handle, bytes.baseAddress, bytes.count, &sent)
    }

    /// Receives what the connection of a connect-only handle has now, into `buffer`.
    func receive(into buffer: UnsafeMutableRawBufferPointer, received: inout Int) -> CURLcode {
        curl_easy_recv(self.handle, buffer.baseAddress, buffer.count, &received)
    }

    /// The socket of a connect-only handle's connection (`CURLINFO_ACTIVESOCKET`), or nil.
    var activeSocket: Int32? {
        var socket: curl_socket_t = -1
        guard tp_easy_getinfo_socket(self.handle, CURLINFO_ACTIVESOCKET, &socket) == CURLE_OK, socket >= 0 else {
            return nil
        }
        return socket
    }

    /// Continues a transfer paused by a read or write callback.
    func unpause() {
        curl_easy_pause(self.handle, tp_pause_cont())
    }

    /// Starts the transfer on `multi`.
    func add(to multi: UnsafeMutableRawPointer) {
        curl_multi_add_handle(multi, self.handle)
    }

    /// Takes the transfer off `multi`; its connection goes back to the cache when complete.
    func remove(from multi: UnsafeMutableRawPointer) {
        curl_multi_remove_handle(multi, self.handle)
    }

    /// Calls `body` with the `CURLOPT_PRIVATE` pointer and the result of every transfer `multi`
    /// reports done since the last call.
    static func forEachDone(in multi: UnsafeMutableRawPointer, _ body: (UnsafeMutableRawPointer, CURLcode) -> Void) {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            var pointer: UnsafeMutableRawPointer?
            _ = tp_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &pointer)
            guard let pointer else { continue }
            body(pointer, message.pointee.data.result)
        }
    }

    /// libcurl's write, read and header callback type.
    typealias DataCallback = @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int
    /// libcurl's pre-request callback type.
    typealias PrerequestCallback =
        @convention(c) (
            UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int32, Int32
        )
        -> Int32
    /// libcurl's open-socket callback type.
    typealias OpenSocketCallback =
        @convention(c) (UnsafeMutableRawPointer?, curlsocktype, UnsafeMutablePointer<curl_sockaddr>?) -> curl_socket_t
}
