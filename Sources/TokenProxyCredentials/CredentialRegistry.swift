import Foundation
import Logging
import Synchronization
import TokenProxyConfiguration
import TokenProxyMetrics
import TokenProxySupport
import TokenProxyUpstream

/// The credential source and header format of every provider, built from the configuration.
/// A reload keeps the sources (and their cached tokens) of providers whose configuration did
/// not change, and retires the others: a replaced source abandons its token request and hands
/// its waiting callers to its successor, which starts afresh.
package final class CredentialRegistry: Sendable {
    /// A provider's source and formatter. A class, so handing one to each request is a
    /// reference count rather than a copy of the provider's whole configuration.
    package final class Entry: Sendable {
        /// Where tokens come from.
        package let source: any CredentialSource
        /// How a token becomes a header.
        package let formatter: CredentialFormatter
        /// The source itself when it makes each request's header (OAuth 1.0a signing); found
        /// once here rather than by a cast per request.
        package let requestAuthorizer: (any RequestAuthorizer)?
        /// The configuration the entry was built from.
        package let configuration: ProviderConfiguration
        /// ``configuration`` when the provider has a client certificate for its routes'
        /// upstreams (RFC 8705), else `nil`: a request to a route without one of its own
        /// takes it from here, and the rest copy nothing.
        package var certifyingConfiguration: ProviderConfiguration? {
            self.configuration.clientCert == nil ? nil : self.configuration
        }

        init(source: any CredentialSource, formatter: CredentialFormatter, configuration: ProviderConfiguration) {
            self.source = source
            self.requestAuthorizer = source as? any RequestAuthorizer
            self.formatter = formatter
            self.configuration = configuration
        }

        /// The header last made, with the token it was made from: a static token, or a
        /// cached one until it is renewed, brings the same header to every request, which is
        /// then formatted and checked once rather than per request.
        private let lastHeader = Mutex<(token: String, header: CredentialHeader)?>(nil)

        /// The header carrying `token`, as ``CredentialFormatter/header(for:provider:)``
        /// makes it.
        package func header(for token: AccessToken) -> Result<CredentialHeader, ProxyError> {
            // Bytes, not String ==, which calls canonically equivalent tokens equal.
            // Compared under the lock, so that only the header is copied out.
            let cached = self.lastHeader.withLockedValue { last -> CredentialHeader? in
                guard let last, Self.sameBytes(last.token, token.value) else { return nil }
                return last.header
            }
            if let cached {
                return .success(cached)
            }
            let result = self.formatter.header(for: token, provider: self.configuration.name)
            if case .success(let header) = result {
                self.lastHeader.withLockedValue { $0 = (token.value, header) }
            }
            return result
        }

        /// Whether `a` and `b` are the same UTF-8 bytes, compared as one block of memory.
        private static func sameBytes(_ a: String, _ b: String) -> Bool {
            // Native Strings give their bytes where they lie; others are made native first.
            if let same = a.utf8.withContiguousStorageIfAvailable({ left in
                b.utf8.withContiguousStorageIfAvailable { right in Self.sameBytes(left, right) }
            }), let same {
                return same
            }
            var a = a
            var b = b
            return a.withUTF8 { left in b.withUTF8 { right in Self.sameBytes(left, right) } }
        }

        private static func sameBytes(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Bool {
            guard left.count == right.count else { return false }
            guard let x = left.baseAddress, let y = right.baseAddress else { return true }
            return memcmp(x, y, left.count) == 0
        }
    }

    private let entries: Mutex<[String: Entry]>
    private let context: Context

    /// What building a source needs besides its provider's configuration.
    struct Context: Sendable {
        var fetcher: UpstreamFetcher
        var store: any TokenStore
        var logger: Logger
        var metrics: ProxyMetrics?
    }

    /// Builds the sources for `configuration`'s providers; token requests go through
    /// `fetcher`, tokens are kept in `store`, token requests are counted in `metrics`.
    package init(
        configuration: ProxyConfiguration,
        fetcher: UpstreamFetcher,
        store: any TokenStore,
        metrics: ProxyMetrics? = nil,
        logger: Logger
    ) {
        self.context = Context(fetcher: fetcher, store: store, logger: logger, metrics: metrics)
        self.entries = Mutex(Self.build(configuration, previous: [:], context: self.context))
        self.watchStore()
    }

    /// Looks at the store's revision once a second and tells every source when it changed, so
    /// a `logout` or `login` in another process takes effect within about a second. The
    /// deadline scheduler times the looks and a credential thread does them (reading the
    /// store takes its lock and may decrypt it). The looks end within a second of the registry.
    private func watchStore() {
        Self.scheduleStoreLook(self, store: self.context.store, seen: self.context.store.revision())
    }

    /// Plans the look a second from now at `store`, last seen at revision `seen`.
    private static func scheduleStoreLook(_ registry: CredentialRegistry, store: any TokenStore, seen: String?) {
        DeadlineScheduler.shared.schedule(at: .now + .seconds(1)) { [weak registry] in
            guard registry != nil else { return }
            CredentialWorker.shared.run { [weak registry] in
                guard let registry else { return }
                let revision = store.revision()
                guard revision != seen else {
                    Self.scheduleStoreLook(registry, store: store, seen: seen)
                    return
                }
                // A read that fails (the lock is held too long, the key file is briefly
                // unreadable) leaves the change unseen, so the next look tries it again.
                guard let contents = try? store.read() else {
                    Self.scheduleStoreLook(registry, store: store, seen: seen)
                    return
                }
                defer { Self.scheduleStoreLook(registry, store: store, seen: revision) }
                let sources = registry.entries.withLockedValue { $0.values.map(\.source) }
                for source in sources {
                    source.storeChanged(contents)
                }
            }
        }
    }

    /// The token store the sources share (fixed at start, like the listeners).
    package var store: any TokenStore { self.context.store }

    /// Replaces the providers, keeping unchanged ones; the sources replaced or removed are
    /// retired (``CredentialSource/retire(handingOverTo:)``) once the new ones are in place.
    package func reload(_ configuration: ProxyConfiguration) {
        let context = self.context
        let (previous, current) = self.entries.withLockedValue { entries in
            let previous = entries
            entries = Self.build(configuration, previous: entries, context: context)
            return (previous, entries)
        }
        for (name, old) in previous where current[name] !== old {
            old.source.retire(handingOverTo: current[name]?.source)
        }
    }

    /// The entry for provider `name`.
    package func entry(_ name: String) -> Entry? {
        self.entries.withLockedValue { $0[name] }
    }

    private static func build(
        _ configuration: ProxyConfiguration,
        previous: [String: Entry],
        context: Context
    ) -> [String: Entry] {
        var entries: [String: Entry] = [:]
        for (name, provider) in configuration.providers {
            if let kept = previous[name], kept.configuration == provider {
                entries[name] = kept
                continue
            }
            entries[name] = Entry(
                source: self.source(for: provider, limits: configuration.limits, context: context),
                formatter: CredentialFormatter(header: provider.header, format: provider.format),
                configuration: provider
            )
        }
        return entries
    }

    private static func source(
        for provider: ProviderConfiguration,
        limits: Limits,
        context: Context
    ) -> any CredentialSource {
        switch provider.grant {
        case .clientCredentials, .password, .refreshToken, .tokenExchange, .jwtBearer, .authorizationCode,
            .deviceCode:
            return OAuthGrantSource(
                provider: provider,
                fetcher: context.fetcher,
                store: context.store,
                limits: limits,
                metrics: context.metrics,
                logger: context.logger
            )
        case .oauth1:
            return OAuth1CredentialSource(provider: provider, store: context.store)
        case .staticToken:
            if let token = provider.token {
                return StaticCredentialSource(name: provider.name, secret: token)
            }
        case .command:
            if let argv = provider.command {
                return CommandCredentialSource(
                    name: provider.name,
                    argv: argv,
                    cacheSeconds: provider.cacheSeconds,
                    refreshSkewSeconds: provider.refreshSkewSeconds,
                    timeout: limits.tokenRequestSeconds,
                    waitSeconds: limits.tokenWaitSeconds,
                    backoffSeconds: limits.tokenFailureBackoffSeconds
                )
            }
        }
        // A static or command provider without its token or command (validation refuses
        // these; a configuration built in code may still lack them).
        return UnsupportedCredentialSource(name: provider.name, grant: provider.grant)
    }
}
