import Dispatch
import TokenProxySupport

extension CredentialSource {
    /// ``token(completion:)`` waited for on the calling thread: for a thread of the caller's
    /// own (a command-line command), never a Dispatch queue that serves connections.
    package func waitForToken() -> Result<AccessToken, ProxyError> {
        Blocking.wait { done in self.token(completion: done) }
    }
}
