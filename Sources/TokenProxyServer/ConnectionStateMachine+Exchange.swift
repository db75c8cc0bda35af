extension ConnectionStateMachine {
    /// The state of the active exchange: how far the request body got, whether and how its
    /// reader takes it, whether `100 Continue` went out, and whether the response started.
    /// Pure; ``ConnectionStateMachine`` holds one while an exchange is active.
    struct Exchange: Sendable, Equatable {
        /// How far the request body got on the wire.
        enum RequestBody: Sendable, Equatable {
            /// Body bytes are still to come; the body deadline runs.
            case streaming
            /// The request ended (or had no body); `endDelivered` once its reader got `.end`.
            case complete(endDelivered: Bool)
        }

        /// The handler's side of the request body.
        enum Reader: Sendable, Equatable {
            /// The handler has not asked for the body.
            case notAsked
            /// The handler takes the body as it arrives.
            case reading
            /// The handler paused the body (`asked` once it also asked for it): the socket is
            /// not read while body bytes are still to come.
            case paused(asked: Bool)
        }

        /// `Expect: 100-continue` (RFC 9110 §10.1.1).
        enum Continue: Sendable, Equatable {
            /// The client did not ask for `100 Continue`.
            case notExpected
            /// The client waits for `100 Continue` before sending the body.
            case expected
            /// `100 Continue` went out.
            case sent
        }

        /// How far the request body got.
        private(set) var requestBody: RequestBody
        /// The handler's side of the request body.
        private(set) var reader: Reader = .notAsked
        /// Whether `100 Continue` is due or went out.
        private(set) var continueState: Continue
        /// Whether the response head went out.
        private(set) var responseStarted = false
        /// Whether the connection stays open after this exchange, so far.
        var keepAlive: Bool

        /// A new exchange for a head the client sent with this framing and `Expect`.
        init(keepAlive: Bool, hasBody: Bool, expectsContinue: Bool) {
            self.requestBody = hasBody ? .streaming : .complete(endDelivered: false)
            self.continueState = expectsContinue ? .expected : .notExpected
            self.keepAlive = keepAlive
        }

        /// Whether body bytes are still to come.
        var isStreaming: Bool { self.requestBody == .streaming }

        /// Whether the parser should feed body bytes to the reader now.
        var parsesBody: Bool { self.isStreaming && self.reader == .reading }

        /// Whether reading the socket waits for the reader: a paused body that has bytes to come.
        var pausesReading: Bool {
            guard self.isStreaming, case .paused = self.reader else { return false }
            return true
        }

        /// Whether body bytes would stay unread: nobody asked for a body still on the wire,
        /// and its framing cannot be trusted to skip it.
        var leavesBodyUnread: Bool {
            switch self.reader {
            case .notAsked, .paused(asked: false): return self.isStreaming
            case .reading, .paused(asked: true): return false
            }
        }

        /// The handler asked for the body.
        mutating func bodyRequested() -> Action {
            switch self.reader {
            case .notAsked: self.reader = .reading
            case .paused(asked: false): self.reader = .paused(asked: true)
            case .reading, .paused(asked: true): return .none
            }
            return self.bodyWanted()
        }

        /// The handler paused the body.
        mutating func bodyPaused() {
            switch self.reader {
            case .notAsked: self.reader = .paused(asked: false)
            case .reading: self.reader = .paused(asked: true)
            case .paused: break
            }
        }

        /// The handler resumed the body.
        mutating func bodyResumed() -> Action {
            guard case .paused(let asked) = self.reader else { return .none }
            self.reader = asked ? .reading : .notAsked
            return self.bodyWanted()
        }

        /// The parser reached the end of the request body.
        mutating func requestBodyEnded() -> Action {
            guard self.isStreaming else { return .none }
            let delivers = self.reader == .reading
            self.requestBody = .complete(endDelivered: delivers)
            return delivers ? .deliverEnd : .arm(.none)
        }

        /// The response head is going out.
        mutating func responseStarts(keepAlive: Bool) {
            self.responseStarted = true
            self.keepAlive = keepAlive
        }

        /// What follows the handler's asking for (more of) the body.
        private mutating func bodyWanted() -> Action {
            switch self.requestBody {
            case .complete(endDelivered: true):
                return .none
            case .complete(endDelivered: false):
                guard self.reader == .reading else { return .none }
                self.requestBody = .complete(endDelivered: true)
                return .deliverEnd
            case .streaming:
                guard self.continueState == .expected, !self.responseStarted else { return .parse }
                self.continueState = .sent
                return .sendContinue
            }
        }
    }
}
