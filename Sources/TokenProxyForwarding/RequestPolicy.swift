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
        /// The lowercased host's bytes and the port's, for a request's authority compared
        /// where it lies.
        var hostBytes: [UInt8]
        var portBytes: [UInt8]?

        init(host: String, port: String?) {
            self.host = host
            self.port = port
            self.hostBytes = Array(host.utf8)
            self.portBytes = port.map { Array($0.utf8) }
        }
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
        guard let allowedHosts = self.allowedHosts else { return true }
        // Compared in the authority's own bytes, with no String made. The allowed hosts were
        // lowercased; a host is compared without ASCII case, which is all a host name has
        // (RFC 3986 §3.2.2: a reg-name outside ASCII comes percent-encoded or as an IDNA
        // A-label).
        var authority = authority
        return authority.withUTF8 { bytes in
            let (hostRange, portRange) = HostName.split(bytes)
            let host = UnsafeBufferPointer(rebasing: bytes[hostRange])
            return allowedHosts.contains { allowed in
                let sameHost = allowed.hostBytes.withUnsafeBufferPointer { ASCII.equalsIgnoringCase(host, $0) }
                guard sameHost else { return false }
                guard let allowedPort = allowed.portBytes else { return true }
                guard let portRange else { return false }
                return UnsafeBufferPointer(rebasing: bytes[portRange]).elementsEqual(allowedPort)
            }
        }
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
        var method = head.method
        if method.withUTF8({ Self.isRefusedMethod($0) }) {
            return ProxyError(.methodNotAllowed, "\(head.method) is not served by tokenproxy")
        }
        // Frameworks that honour a method-override field would turn a POST into the method.
        // One pass over the fields for both checks, no String made unless one fails.
        var override: (name: String, value: String)?
        var authorizations = 0
        head.headers.forEachField { name, value in
            if HTTPHeaders.name(name, is: "authorization") {
                authorizations += 1
            } else if override == nil, Self.isRefusedMethod(value),
                let field = Self.methodOverrideFields.first(where: { HTTPHeaders.name(name, equals: $0) })
            {
                override = (field, String(decoding: value, as: UTF8.self))
            }
        }
        if let override {
            return ProxyError(.methodNotAllowed, "\(override.name): \(override.value) is not served by tokenproxy")
        }
        if authorizations > 1 {
            return ProxyError(.badRequest, "more than one Authorization header")
        }
        if head.targetForm == .asterisk {
            return ProxyError(.noRoute, "no route for *")
        }
        return nil
    }

    private static let refusedMethods: [[UInt8]] = [Array("CONNECT".utf8), Array("TRACE".utf8), Array("TRACK".utf8)]

    /// The fields some frameworks (Rails, ASP.NET, Google APIs) take as the real method.
    private static let methodOverrideFields = ["X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"]

    /// Whether `method` is one of ``refusedMethods`` in any letter case; most methods differ
    /// from all three in length, which is looked at first.
    private static func isRefusedMethod(_ method: UnsafeBufferPointer<UInt8>) -> Bool {
        guard method.count == 5 || method.count == 7 else { return false }
        return Self.refusedMethods.contains { ASCII.equalsIgnoringCase(method, $0) }
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
        } else if let host = head.host, !self.isAllowed(authority: host) {
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
