import CCurl
import CSystemShims
import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What the engine collected for a transfer's sink during one turn: delivered together, so
/// a client gets one hop and one flush however many callbacks libcurl made.
struct CurlDelivery: Sendable {
    /// How the transfer ended.
    enum End: Sendable {
        case finish
        case abort
        case fail(ProxyError)
    }

    var head: HTTPResponseHead?
    var body: [[UInt8]] = []
    var bodyBytes = 0
    var end: End?

    var isEmpty: Bool { self.head == nil && self.body.isEmpty && self.end == nil }
}
