import Dispatch

/// What a handler receives while reading a request body.
package enum RequestBodyEvent: Sendable, Equatable {
    /// The next bytes of the body.
    case bytes([UInt8])
    /// The body is complete.
    case end
}
