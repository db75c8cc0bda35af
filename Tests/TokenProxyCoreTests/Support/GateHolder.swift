import Dispatch
import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxySupport

/// Holds a context's gate on a thread of its own (never a Dispatch worker) until released.
final class GateHolder: @unchecked Sendable {
    private let taken = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    init(_ context: SerialContext) {
        let thread = Thread { [taken, released] in
            context.run {
                taken.signal()
                released.wait()
            }
        }
        thread.start()
        self.taken.wait()
    }

    func release() {
        self.released.signal()
    }
}
