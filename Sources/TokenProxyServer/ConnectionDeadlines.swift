import TokenProxySupport

/// The instants of a connection's deadlines, which share one timer source: the input
/// deadline (header, idle or body, as ``ConnectionStateMachine`` arms it), the send deadline
/// and the linger deadline. Pure: setting a deadline returns the instant the timer source
/// must be rescheduled to, only when that is earlier than the one it fires at; a later
/// deadline is looked at when the source fires. Re-arming on every request would otherwise
/// cost a timer update each time.
struct ConnectionDeadlines: Sendable {
    /// A deadline that passed.
    enum Expired: Sendable, Equatable {
        /// The input deadline the state machine armed.
        case input
        /// The send deadline: the client took no byte of its answer in time.
        case send
        /// The linger deadline of a closing connection.
        case linger
    }

    private var input: MonotonicTime?
    private var send: MonotonicTime?
    private var linger: MonotonicTime?
    /// When the timer source fires next.
    private var scheduledFire: MonotonicTime?

    /// Sets (or clears) the input deadline; returns the instant to reschedule the source to.
    mutating func setInput(_ deadline: MonotonicTime?) -> MonotonicTime? {
        self.input = deadline
        return deadline.flatMap { self.schedule($0) }
    }

    /// Sets (or clears) the send deadline; returns the instant to reschedule the source to.
    mutating func setSend(_ deadline: MonotonicTime?) -> MonotonicTime? {
        self.send = deadline
        return deadline.flatMap { self.schedule($0) }
    }

    /// Sets the linger deadline, which from now on is the only one that counts; returns the
    /// instant to reschedule the source to.
    mutating func setLinger(_ deadline: MonotonicTime) -> MonotonicTime? {
        self.linger = deadline
        return self.schedule(deadline)
    }

    /// The timer source fired at `now`: which deadline passed, if any, and the instant to
    /// reschedule the source to for those still pending.
    mutating func fired(now: MonotonicTime) -> (expired: Expired?, reschedule: MonotonicTime?) {
        self.scheduledFire = nil
        if let linger = self.linger {
            guard now < linger else { return (.linger, nil) }
            return (nil, self.schedule(linger))
        }
        var reschedule: MonotonicTime?
        if let send = self.send {
            guard now < send else { return (.send, nil) }
            reschedule = self.schedule(send)
        }
        guard let input = self.input else { return (nil, reschedule) }
        guard now < input else {
            self.input = nil
            return (.input, reschedule)
        }
        return (nil, self.schedule(input) ?? reschedule)
    }

    /// Makes the source fire by `deadline`: returns `deadline` when the source must be
    /// rescheduled to it, nil when it already fires earlier.
    private mutating func schedule(_ deadline: MonotonicTime) -> MonotonicTime? {
        guard self.scheduledFire.map({ deadline < $0 }) ?? true else { return nil }
        self.scheduledFire = deadline
        return deadline
    }
}
