import Foundation
import TokenProxyConfiguration
import TokenProxyHTTP
import TokenProxyServer
import TokenProxySupport

/// The request checks that come before routing: what a client may ask of a deputy holding
/// someone's credentials (`docs/reference/http-behaviour.md`, "Who may talk to the proxy"). Pure: no
/// I/O beyond resolving the `require_header` secret.
struct RequestPolicy: Sendable {
    private struct AllowedHost: Sendable, Equatable {
        var host: String
        var port: String?
    }

    private let allowedHosts: [AllowedHost]?
    private let requireHeader: HeaderRequirement?

    /// Creates the policy; `allowedHosts` of `["*"]` disables the Host check.
    init(allowedHosts: [String], requireHeader: HeaderRequirement?) {
        if allowedHosts.contains("*") {
            self.allowedHosts = nil
        } else {
            self.allowedHosts = allowedHosts.map { entry in
                let (host, port) = HostName.normalize(entry)
                return AllowedHost(host: host, port: port)
            }
        }
        self.requireHeader = requireHeader
    }

    /// Whether `authority` (`host[:port]`) is an allowed host.
    func isAllowed(authority: String) -> Bool {
        guard self.allowedHosts != nil else { return true }
        let (host, port) = HostName.normalize(authority)
        return self.isAllowed(host: host, port: port)
    }

    /// Whether the normalized `host` with `port` (nil when none was given) is allowed.
    func isAllowed(host: String, port: String?) -> Bool {
        guard let allowedHosts = self.allowedHosts else { return true }
        return allowedHosts.contains { $0.host == host && ($0.port == nil || $0.port == port) }
    }

    /// Whether the Host check is disabled (`allowed_hosts: ["*"]`).
    var allowsEveryHost: Bool { self.allowedHosts == nil }

    /// The checks every request gets, admin probes included: methods and request-target sanity.
    func checkRequest(_ head: HTTPRequestHead) -> ProxyError? {
        // CONNECT would make us a tunnel; TRACE (and IIS's TRACK) would echo the injected
        // credential. Compared without case: some upstreams match methods that way.
        if Self.isRefusedMethod(head.method) {
            return ProxyError(.methodNotAllowed, "\(head.method) is not served by tokenproxy")
        }
        // Frameworks that honour a method-override field would turn a POST into the method.
        for name in Self.methodOverrideFields {
            for value in head.headers.values(name) where Self.isRefusedMethod(value) {
                return ProxyError(.methodNotAllowed, "\(name): \(value) is not served by tokenproxy")
            }
        }
        if head.headers.values("Authorization").count > 1 {
            return ProxyError(.badRequest, "more than one Authorization header")
        }
        if head.targetForm == .asterisk {
            return ProxyError(.noRoute, "no route for *")
        }
        return nil
    }

    private static let refusedMethods = ["CONNECT", "TRACE", "TRACK"]

    /// The fields some frameworks (Rails, ASP.NET, Google APIs) take as the real method.
    private static let methodOverrideFields = ["X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"]

    private static func isRefusedMethod(_ method: String) -> Bool {
        Self.refusedMethods.contains { method.equalsIgnoringASCIICase($0) }
    }

    /// The checks that guard credentials: allowed hosts (DNS-rebinding defence), browser
    /// requests from other origins (see ``checkBrowser(_:listener:)``), and the
    /// `require_header` shared secret. `listener` is the listener the request came in on.
    func checkAccess(_ head: HTTPRequestHead, listener: Listener) -> ProxyError? {
        if case .absolute(let authority) = head.targetForm {
            // RFC 9112 §3.2.2: the target's authority stands for the host, and Host is ignored.
            guard self.isAllowed(authority: authority) else {
                return ProxyError(.hostNotAllowed, "the request target's host is not an allowed host")
            }
        } else if let host = head.headers.first("Host"), !self.isAllowed(authority: host) {
            return ProxyError(.hostNotAllowed, "Host '\(host)' is not in allowed_hosts")
        }
        if let error = self.checkBrowser(head, listener: listener) {
            return error
        }
        if let requirement = self.requireHeader {
            let expected = try? requirement.value.resolve()
            let given = head.headers.values(requirement.name)
            guard let expected, given.count == 1, ConstantTime.equals(given[0], expected) else {
                return ProxyError(.headerRequired, "the \(requirement.name) header is missing or wrong")
            }
        }
        return nil
    }
}
