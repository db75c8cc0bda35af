import Logging

/// A weak reference, for closures that must not keep their target alive.
package final class WeakReference<Object: AnyObject> {
    package weak var object: Object?

    package init(_ object: Object) {
        self.object = object
    }
}
