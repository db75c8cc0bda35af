extension HTTPExchange {
    /// Sends `response` and, when it is the proxy's own error answer (``HTTPResponse/error``),
    /// notes its code (and for a 502 or 504 its message) in ``logFields`` for the access line
    /// (``ErrorResponse/logFields(for:)``). An exchange whose response already started or
    /// ended is left as it is, notes included.
    func answer(_ response: HTTPResponse) {
        guard !self.responseStarted, !self.isComplete else { return }
        if let error = response.error {
            for field in ErrorResponse.logFields(for: error) {
                self.logFields[field.key] = field.value
            }
        }
        self.respond(response)
    }

    /// Answers `error` with the proxy's own error response (``ErrorResponse``), noted for the
    /// access line as ``answer(_:)`` does.
    func respond(to error: ProxyError) {
        self.answer(ErrorResponse.response(for: error))
    }
}
